package delivery

import (
	"context"
	"fmt"
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

func (k *endSink) Ended(e End) {
	k.boundedSink.Ended(e)
	k.mu.Lock()
	k.ended[e.Sid] = e.Why
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
	if err := hub.Unsubscribe(ctx, cancelled, "u", nil); err != nil {
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

// orderSink records notifications and ends in order; its first Notify
// waits for release.
type orderSink struct {
	mu      sync.Mutex
	events  []string
	seqs    []int64 // of the notifications
	last    int64   // the last of them when the end came
	first   sync.Once
	entered chan struct{}
	release chan struct{}
}

func (k *orderSink) Notify(n *Notification) bool {
	k.first.Do(func() { close(k.entered); <-k.release })
	k.mu.Lock()
	k.events = append(k.events, "note")
	k.seqs = append(k.seqs, n.Seq)
	k.mu.Unlock()
	return true
}

func (k *orderSink) Ended(e End) {
	k.mu.Lock()
	k.events = append(k.events, fmt.Sprintf("%s after %d", e.Why, e.Last))
	k.last = k.seqs[len(k.seqs)-1]
	k.mu.Unlock()
}

// TestEndedFollowsAResumesReplay: a subscription resumed just after its
// window, whose replay is still going out when Expire comes, ends only
// after the replay: the ended word never overtakes a notification.
func TestEndedFollowsAResumesReplay(t *testing.T) {
	hub, clock := openHub(t)
	ctx := context.Background()
	c := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.MustParse("1.2")}
	away := newSink()
	sid := subscribeTo(t, hub, away, "u", c, time.Second)
	for range 3 {
		publishIn(t, hub, c)
	}
	hub.Drain()
	hub.Detach(sid, away) // the connection went before reading them
	clock.Advance(1200 * time.Millisecond)
	back := &orderSink{entered: make(chan struct{}), release: make(chan struct{})}
	done := make(chan error)
	go func() { done <- hub.Resume(ctx, sid, 0, "u", back, func(*subscriptions.ReplayResult) {}) }()
	<-back.entered // replaying, and stuck
	clock.Advance(2 * time.Second)
	hub.Expire(clock.Now())
	close(back.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	hub.Expire(clock.Now())
	back.mu.Lock()
	defer back.mu.Unlock()
	want := fmt.Sprintf("[note note note window_over after %d]", back.last)
	if fmt.Sprint(back.events) != want || back.last == 0 {
		t.Fatalf("events %v, want the three notifications, then the end after the last (%s)", back.events, want)
	}
}
