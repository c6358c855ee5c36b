package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/delivery"
	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/subscriptions"
)

// pipelined subscribes to cell through holder the way the gateway's
// pipeline runs a connection's requests: once the subscribe has taken its
// place, the next requests (pubs publications in the same cell) start,
// before its answer. The answer waits until every publication has been
// answered, so their notifications have reached holder before the client
// could know the subscription, and then for hold more. It returns the
// sid and what sink held when the answer came.
func pipelined(t *testing.T, holder *testNode, k *sink, cell subscriptions.Cell, pubs int, future, hold time.Duration) (sid string, early int) {
	t.Helper()
	published := make(chan error, 1)
	var stamped int
	mark := func() {
		stamped++
		if stamped > 1 {
			return
		}
		go func() {
			for i := range pubs {
				err := holder.Publish(context.Background(), &subscriptions.PublishRequest{Uid: "p", Cell: cell, Desc: fmt.Sprint("pub ", i), Expires: time.Hour},
					func(*subscriptions.PublishResult) {})
				if err != nil {
					published <- err
					return
				}
			}
			published <- nil
		}()
	}
	err := holder.Subscribe(context.Background(), &subscriptions.SubscribeRequest{Uid: "s", Cell: cell, Future: future, Stamped: mark}, k,
		func(_ *subscriptions.SubscribeResult, s string) {
			select {
			case err := <-published:
				if err != nil {
					t.Error(err)
				}
			case <-time.After(10 * time.Second):
				t.Error("the publications sent after the subscribe took its place got no answer while it waited for its own")
			}
			time.Sleep(hold)
			sid = s
			k.mu.Lock()
			early = len(k.got[s])
			if _, ok := k.ended[s]; ok {
				early++
			}
			k.mu.Unlock()
		})
	if err != nil {
		t.Fatal(err)
	}
	if stamped == 0 {
		t.Fatal("the subscribe never reported taking its place: the connection's next request would wait for its answer")
	}
	return sid, early
}

// The gateway runs a connection's next request once the last one has
// taken its place. In a cluster that is once the request has left for
// its shard's owner, which runs a shard's requests in the order they come.
// Notifications that reach the holder before the subscriber has its
// answer wait for it, and none is lost or repeated, for a shard of the
// holder's own and one of another node.
func TestRequestsPipeline(t *testing.T) {
	nodes := startNodes(t, natsCluster(t, 3), 2)
	waitSteady(t, nodes)
	holder := nodes[0]
	var local, remote subscriptions.Cell
	for a := uint32(1); a <= 4; a++ {
		for b := uint32(1); b <= 4; b++ {
			cell := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{a, b, 1}}
			if slices.Contains(holder.Owned(), holder.cfg.Shards.Home([]subscriptions.Cell{cell})) {
				local = cell
			} else {
				remote = cell
			}
		}
	}
	if local.ID == nil || remote.ID == nil {
		t.Fatalf("holder owns %v: want a shard of its own and one of another node", holder.Owned())
	}
	for _, c := range []struct {
		name string
		cell subscriptions.Cell
	}{{"own shard", local}, {"other node's shard", remote}} {
		t.Run(c.name, func(t *testing.T) {
			k := newSink()
			sid, early := pipelined(t, holder, k, c.cell, 3, time.Hour, 0)
			if early != 0 {
				t.Fatalf("%d notifications reached the subscriber before its answer", early)
			}
			waitGot(t, k, sid, []string{"pub 0", "pub 1", "pub 2"})
		})
	}
}

// A route that holds more than maxHeld notifications before its answer
// resumes once answered, and its owner replays the rest.
func TestHeldOverflowResumes(t *testing.T) {
	defer func(n int) { maxHeld = n }(maxHeld)
	maxHeld = 2
	nodes := startNodes(t, natsCluster(t, 3), 2)
	waitSteady(t, nodes)
	holder := nodes[0]
	var cell subscriptions.Cell
	for a := uint32(1); a <= 4 && cell.ID == nil; a++ {
		for b := uint32(1); b <= 4; b++ {
			c := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{a, b, 2}}
			if !slices.Contains(holder.Owned(), holder.cfg.Shards.Home([]subscriptions.Cell{c})) {
				cell = c
				break
			}
		}
	}
	if cell.ID == nil {
		t.Fatalf("holder owns %v: want a shard of another node", holder.Owned())
	}
	k := newSink()
	sid, early := pipelined(t, holder, k, cell, 5, time.Hour, 0)
	if early != 0 {
		t.Fatalf("%d notifications reached the subscriber before its answer", early)
	}
	waitGot(t, k, sid, []string{"pub 0", "pub 1", "pub 2", "pub 3", "pub 4"})
}

// A subscription whose window ends before its answer gets its
// notifications, then its end, after the answer. The owner's hub sweeps
// ended windows each second, a window ending in second s once the clock
// passes s+2: a window of 0.5 s has ended by 3.5 s, within the hold.
func TestEndHeldUntilAnswered(t *testing.T) {
	nodes := startNodes(t, natsCluster(t, 3), 2)
	waitSteady(t, nodes)
	holder := nodes[0]
	cell := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1, 1, 3}}
	k := newSink()
	sid, early := pipelined(t, holder, k, cell, 2, 500*time.Millisecond, 4*time.Second)
	if early != 0 {
		t.Fatalf("%d notifications or ends reached the subscriber before its answer", early)
	}
	waitGot(t, k, sid, []string{"pub 0", "pub 1"})
	deadline := time.Now().Add(5 * time.Second)
	for {
		k.mu.Lock()
		why, ok := k.ended[sid]
		k.mu.Unlock()
		if ok && why == delivery.EndWindow {
			return
		}
		if ok || time.Now().After(deadline) {
			t.Fatalf("the subscription's end: %q (told: %v), want %q", why, ok, delivery.EndWindow)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitGot waits until sink has exactly want for sid, in order, and stays
// so a moment longer (no repeats on their way).
func waitGot(t *testing.T, k *sink, sid string, want []string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		k.mu.Lock()
		got := slices.Clone(k.got[sid])
		k.mu.Unlock()
		if slices.Equal(got, want) {
			time.Sleep(200 * time.Millisecond)
			k.mu.Lock()
			again := slices.Clone(k.got[sid])
			k.mu.Unlock()
			if !slices.Equal(again, want) {
				t.Fatalf("got %q, then %q: want %q", got, again, want)
			}
			return
		}
		if len(got) > len(want) || time.Now().After(deadline) {
			t.Fatalf("got %q, want %q", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
