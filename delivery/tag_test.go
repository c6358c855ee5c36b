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

// tagSink records the tag of every notification and end it hears, by
// subscription; with room >= 0 it refuses past room queued notifications.
type tagSink struct {
	mu    sync.Mutex
	room  int
	tags  map[string][]uint64
	ended map[string]string // "why tag"
}

func newTagSink(room int) *tagSink {
	return &tagSink{room: room, tags: map[string][]uint64{}, ended: map[string]string{}}
}

func (k *tagSink) Notify(n *Notification) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.room == 0 {
		return false
	}
	k.room--
	k.tags[n.Sid] = append(k.tags[n.Sid], n.Tag)
	return true
}

func (k *tagSink) Ended(e End) {
	k.mu.Lock()
	k.ended[e.Sid] = fmt.Sprint(e.Why, " ", e.Tag)
	k.mu.Unlock()
}

func (k *tagSink) saw(sid string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return fmt.Sprint(k.tags[sid])
}

// TestTagsFollowTheRoute: a route made with a tag hands it to its sink
// with every notification (live, replayed by a resume, replayed by a
// catch-up) and with its end, and a resume's new tag replaces the old
// one; a sink serving many routes (the cluster's, one per holding node)
// depends on it to name the route.
func TestTagsFollowTheRoute(t *testing.T) {
	hub, clock := openHub(t)
	ctx := context.Background()
	c := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.MustParse("1.2")}
	a, b := newTagSink(-1), newTagSink(-1)
	var sid string
	err := hub.SubscribeTagged(ctx, &subscriptions.SubscribeRequest{Uid: "u", Cell: c, Future: time.Hour}, a, 11,
		func(_ *subscriptions.SubscribeResult, s string) { sid = s })
	if err != nil {
		t.Fatal(err)
	}
	plain := subscribeTo(t, hub, a, "u", c, time.Hour)
	publishIn(t, hub, c)
	hub.Drain()
	if got := a.saw(sid); got != "[11]" {
		t.Fatalf("live notification tags %s, want [11]", got)
	}
	if got := a.saw(plain); got != "[0]" {
		t.Fatalf("an untagged route's notification tags %s, want [0]", got)
	}
	// A resume on the same sink from the start replays the publication
	// with the new tag, and the next one comes with it too.
	if err := hub.ResumeTagged(ctx, sid, 0, "u", a, 12, func(*subscriptions.ReplayResult) {}); err != nil {
		t.Fatal(err)
	}
	publishIn(t, hub, c)
	hub.Drain()
	if got := a.saw(sid); got != "[11 12 12]" {
		t.Fatalf("after a resume tagged 12: %s, want [11 12 12]", got)
	}
	// Moved to another sink: the old sink's end names the old tag.
	if err := hub.ResumeTagged(ctx, sid, 0, "u", b, 13, func(*subscriptions.ReplayResult) {}); err != nil {
		t.Fatal(err)
	}
	if got := a.ended[sid]; got != "moved 12" {
		t.Fatalf("the old sink heard %q, want %q", got, "moved 12")
	}
	// A catch-up's replay and the window's end carry the tag.
	slow := newTagSink(0)
	var lagging string
	err = hub.SubscribeTagged(ctx, &subscriptions.SubscribeRequest{Uid: "u", Cell: c, Future: time.Second}, slow, 21,
		func(_ *subscriptions.SubscribeResult, s string) { lagging = s })
	if err != nil {
		t.Fatal(err)
	}
	publishIn(t, hub, c) // refused: the route lags
	hub.Drain()
	slow.mu.Lock()
	slow.room = -1
	slow.mu.Unlock()
	if _, err := hub.CatchUp(ctx, slow); err != nil {
		t.Fatal(err)
	}
	if got := slow.saw(lagging); got != "[21]" {
		t.Fatalf("a catch-up's tags %s, want [21]", got)
	}
	clock.Advance(3 * time.Second)
	hub.Expire(clock.Now())
	if got := slow.ended[lagging]; got != "window_over 21" {
		t.Fatalf("the window's end %q, want %q", got, "window_over 21")
	}
}
