package storetest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/subscriptions"
)

// gatedBackend holds every Wait until open closes, and counts Appends and
// Waits by kind.
type gatedBackend struct {
	listdb.Backend
	open                    chan struct{}
	appends, syncs, written atomic.Int64
	waiting                 atomic.Int64
}

func (g *gatedBackend) Append(a []listdb.Append) (listdb.Commit, error) {
	g.appends.Add(1)
	return g.Backend.Append(a)
}

func (g *gatedBackend) Wait(c listdb.Commit, sync bool) error {
	if sync {
		g.syncs.Add(1)
	} else {
		g.written.Add(1)
	}
	g.waiting.Add(1)
	<-g.open
	return g.Backend.Wait(c, sync)
}

// until polls cond for up to 10 s.
func until(cond func() bool) bool {
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// Durability checks the commit path: an operation is not answered before
// its write is durable in the store's mode, and no operation holds the
// store lock while it waits for the disk, so a second write is applied
// while the first one's fsync is pending (and can share it). The store is
// rebuilt over the opener's backend with a gate in front; the test runs
// too few writes for a compaction, whose expiry filter would not see
// this wrapper's in-flight stamps.
func Durability(t *testing.T, open Opener) {
	cell := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1, 2}}
	for _, mode := range []listdb.Durability{listdb.Synced, listdb.Written, listdb.Buffered} {
		t.Run(mode.String(), func(t *testing.T) {
			base, err := open(t.TempDir(), listdb.Config{Durability: mode}, nil)
			if err != nil {
				t.Fatal(err)
			}
			g := &gatedBackend{Backend: base.Backend(), open: make(chan struct{})}
			st, err := listdb.NewStore(g, listdb.Config{Durability: mode})
			if err != nil {
				t.Fatal(err)
			}
			var release sync.Once
			openGate := func() { release.Do(func() { close(g.open) }) }
			defer st.Close()
			defer openGate() // before Close, so a failed check cannot hang
			ctx := context.Background()
			var done sync.WaitGroup
			var answered atomic.Int64
			op := func(i int) {
				defer done.Done()
				var err error
				if i%2 == 0 {
					_, err = st.Publish(ctx, &subscriptions.PublishRequest{Uid: "p", Cell: cell, Expires: time.Minute})
				} else {
					_, err = st.Subscribe(ctx, &subscriptions.SubscribeRequest{Uid: "s", Cell: cell, Future: time.Minute})
				}
				if err != nil {
					t.Error(err)
				}
				answered.Add(1)
			}
			before := g.appends.Load() // NewStore's own metadata
			done.Add(1)
			go op(0)
			if mode == listdb.Buffered {
				done.Wait()
				if g.syncs.Load()+g.written.Load() != 0 {
					t.Fatalf("buffered mode waited for the log %d times", g.syncs.Load()+g.written.Load())
				}
				openGate()
				return
			}
			if !until(func() bool { return g.waiting.Load() == 1 }) {
				t.Fatal("the first write never waited for the log")
			}
			done.Add(1)
			go op(1)
			if !until(func() bool { return g.appends.Load()-before == 2 }) {
				t.Fatal("a second operation could not write while the first waited for the disk: the store lock is held across the wait")
			}
			time.Sleep(20 * time.Millisecond)
			if n := answered.Load(); n != 0 {
				t.Fatalf("%d operations answered before their writes were durable", n)
			}
			openGate()
			done.Wait()
			wantSync := mode == listdb.Synced
			if (g.syncs.Load() > 0) != wantSync || (g.written.Load() > 0) == wantSync {
				t.Fatalf("mode %v: %d synced waits, %d written waits", mode, g.syncs.Load(), g.written.Load())
			}
		})
	}
}
