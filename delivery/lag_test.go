package delivery

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/subscriptions"
)

// boundedSink is a transport's send queue: it refuses while it holds room
// notifications, until the reader drains it.
type boundedSink struct {
	mu     sync.Mutex
	room   int
	queued []*Notification
	got    map[string][]int64 // drained seqs by sid
	prevs  map[string][]int64 // and their Prev
	lost   map[string]bool
}

func newBoundedSink(room int) *boundedSink {
	return &boundedSink{room: room, got: map[string][]int64{}, prevs: map[string][]int64{}, lost: map[string]bool{}}
}

func (k *boundedSink) Notify(n *Notification) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.queued) >= k.room {
		return false
	}
	c := *n // the hub reuses n
	k.queued = append(k.queued, &c)
	return true
}

func (k *boundedSink) Ended(e End) { k.mu.Lock(); k.lost[e.Sid] = true; k.mu.Unlock() }

// drain reads everything queued.
func (k *boundedSink) drain() {
	k.mu.Lock()
	for _, n := range k.queued {
		k.got[n.Sid] = append(k.got[n.Sid], n.Seq)
		k.prevs[n.Sid] = append(k.prevs[n.Sid], n.Prev)
	}
	k.queued = k.queued[:0]
	k.mu.Unlock()
}

// TestLaggingSinkCatchesUpWithoutLoss: a sink whose queue holds only a
// few notifications falls behind a burst while another sink keeps up.
// The fast one gets everything at once; the slow one is never cut, and
// after draining and CatchUp it has every notification exactly once, in
// order. The oracle is the store's own match lists from each publication's
// answer, not the hub's routing.
func TestLaggingSinkCatchesUpWithoutLoss(t *testing.T) {
	hub, clock := openHub(t)
	ctx := context.Background()
	slow, fast := newBoundedSink(7), newBoundedSink(1<<30)
	rng := rand.New(rand.NewSource(3))
	cell := func() subscriptions.Cell {
		return subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.MustParse(cells[rng.Intn(len(cells))])}
	}
	owner := map[string]*boundedSink{}
	sidOf := map[int64]string{} // by stamp
	for i := range 40 {
		k := slow
		if i%2 == 1 {
			k = fast
		}
		sid := subscribeTo(t, hub, k, fmt.Sprint("u", i), cell(), time.Hour)
		owner[sid] = k
		ts, _, err := subscriptions.ParseID(sid)
		if err != nil {
			t.Fatal(err)
		}
		sidOf[ts] = sid
	}
	want := map[string][]int64{}
	for i := range 600 {
		req := &subscriptions.PublishRequest{Uid: "p", Cell: cell(), Expires: time.Hour}
		err := hub.Publish(ctx, req, func(res *subscriptions.PublishResult) {
			for _, s := range res.Matches {
				want[sidOf[s.Ts]] = append(want[sidOf[s.Ts]], Seq(s.Ts, &res.Pub))
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Millisecond)
		if i%50 == 49 { // the slow reader wakes up now and then
			hub.Drain()
			slow.drain()
			if _, err := hub.CatchUp(ctx, slow); err != nil {
				t.Fatal(err)
			}
		}
		fast.drain()
	}
	hub.Drain()
	for range 100_000 {
		slow.drain()
		if hub.Stats().Lagging == 0 {
			break
		}
		if _, err := hub.CatchUp(ctx, slow); err != nil {
			t.Fatal(err)
		}
	}
	slow.drain()
	fast.drain()
	if st := hub.Stats(); st.Lagging != 0 || st.CatchUps == 0 || st.Skipped == 0 {
		t.Fatalf("stats %+v: want no route left lagging, and catch-ups of skipped notifications", st)
	}
	for sid, k := range owner {
		if got := k.got[sid]; fmt.Sprint(got) != fmt.Sprint(want[sid]) {
			t.Errorf("%s (slow %v): got %d notifications %v, want %d %v", sid, k == slow, len(got), got, len(want[sid]), want[sid])
		}
		if k.lost[sid] {
			t.Errorf("%s lost its route", sid)
		}
		// Across catch-ups too, each notification names the one before.
		if want := append([]int64{0}, k.got[sid]...)[:len(k.got[sid])]; fmt.Sprint(k.prevs[sid]) != fmt.Sprint(want) {
			t.Errorf("%s: prevs %v, want %v", sid, k.prevs[sid], want)
		}
	}
}

// TestPublishRefusedWhenBacklogFull: past the backlog bound a publication
// is refused with a typed error carrying a retry hint, and nothing is
// stored; once the dispatcher catches up, publications are taken again.
func TestPublishRefusedWhenBacklogFull(t *testing.T) {
	hub, _ := openHub(t)
	hub.cfg.MaxBacklog = 10
	ctx := context.Background()
	c := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.MustParse("1.2")}
	k := newSink()
	for i := range 12 {
		subscribeTo(t, hub, k, fmt.Sprint("u", i), c, time.Hour)
	}
	// Hold the dispatcher: a publication whose answer blocks keeps its
	// backlog counted, as a dispatcher far behind would.
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- hub.Publish(ctx, &subscriptions.PublishRequest{Uid: "p", Cell: c, Expires: time.Hour}, func(*subscriptions.PublishResult) { <-release })
	}()
	for hub.Stats().Backlog < 12 {
		time.Sleep(time.Millisecond)
	}
	stored := false
	err := hub.Publish(ctx, &subscriptions.PublishRequest{Uid: "p", Cell: c, Expires: time.Hour}, func(*subscriptions.PublishResult) { stored = true })
	var oe *OverloadedError
	if !errors.As(err, &oe) || !errors.Is(err, ErrOverloaded) || oe.RetryAfter <= 0 || oe.Backlog < 12 || stored {
		t.Fatalf("publish over the backlog bound: %v (stored %v)", err, stored)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	hub.Drain()
	if err := hub.Publish(ctx, &subscriptions.PublishRequest{Uid: "p", Cell: c, Expires: time.Hour}, func(*subscriptions.PublishResult) {}); err != nil {
		t.Fatalf("after the backlog drained: %v", err)
	}
	if st := hub.Stats(); st.Overloaded != 1 {
		t.Fatalf("overloaded count %d, want 1", st.Overloaded)
	}
}
