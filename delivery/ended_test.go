package delivery

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/subscriptions"
)

// endSink is a sink that hears why routes end; room bounds what it takes.
type endSink struct {
	*boundedSink
	mu    sync.Mutex
	ended map[string]EndReason
}

func (k *endSink) Ended(sid, uid string, why EndReason) {
	k.mu.Lock()
	k.ended[sid] = why
	k.mu.Unlock()
}

// TestEndedSaysWhy: a route that ends tells its sink why — window over,
// cancelled, moved to another sink by a resume, or over while the sink
// was behind — and only once the notifications before the end are out.
func TestEndedSaysWhy(t *testing.T) {
	hub, clock := openHub(t)
	ctx := context.Background()
	a := &endSink{boundedSink: newBoundedSink(1 << 20), ended: map[string]EndReason{}}
	b := &endSink{boundedSink: newBoundedSink(1 << 20), ended: map[string]EndReason{}}
	slow := &endSink{boundedSink: newBoundedSink(0), ended: map[string]EndReason{}}
	c := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.MustParse("1.2")}
	window := subscribeTo(t, hub, a, "u", c, time.Second)
	cancelled := subscribeTo(t, hub, a, "u", c, time.Hour)
	moved := subscribeTo(t, hub, a, "u", c, time.Hour)
	behind := subscribeTo(t, hub, slow, "u", c, time.Second)
	publishIn(t, hub, c) // refused by the slow sink: it lags
	hub.Drain()
	if err := hub.Unsubscribe(ctx, cancelled, "u"); err != nil {
		t.Fatal(err)
	}
	if err := hub.Resume(ctx, moved, 0, "u", b, func(*subscriptions.ReplayResult) {}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(3 * time.Second)
	hub.Expire(clock.Now())
	want := map[string]EndReason{window: EndWindow, cancelled: EndCancelled, moved: EndMoved}
	for sid, why := range want {
		if a.ended[sid] != why {
			t.Errorf("%s ended %q, want %q", sid, a.ended[sid], why)
		}
	}
	if slow.ended[behind] != EndBehind {
		t.Errorf("the lagging route ended %q, want %q", slow.ended[behind], EndBehind)
	}
	if len(b.ended) != 0 {
		t.Errorf("the sink that took over heard %v", b.ended)
	}
}
