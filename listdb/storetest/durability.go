package storetest

import (
	"context"
	"fmt"
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

// recordingBackend notes the commits of every Append and Wait.
type recordingBackend struct {
	listdb.Backend
	mu              sync.Mutex
	appended, waits []listdb.Commit
}

func (r *recordingBackend) Append(a []listdb.Append) (listdb.Commit, error) {
	c, err := r.Backend.Append(a)
	r.mu.Lock()
	r.appended = append(r.appended, c)
	r.mu.Unlock()
	return c, err
}

func (r *recordingBackend) Wait(c listdb.Commit, sync bool) error {
	r.mu.Lock()
	r.waits = append(r.waits, c)
	r.mu.Unlock()
	return r.Backend.Wait(c, sync)
}

// ReadersWaitForWhatTheyRead: an operation that stores nothing (a
// subscription without a future, a publication without an expiry, a
// replay) reports what it reads, so before it answers it waits for the
// newest write before it, not for nothing: no reply shows a write that is
// not yet durable.
func ReadersWaitForWhatTheyRead(t *testing.T, open Opener) {
	cell := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1, 2}}
	base, err := open(t.TempDir(), listdb.Config{Durability: listdb.Synced}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rb := &recordingBackend{Backend: base.Backend()}
	st, err := listdb.NewStore(rb, listdb.Config{Durability: listdb.Synced})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	// waitedForLast checks that the operation run waited for the newest
	// Append before it and appended nothing itself.
	waitedForLast := func(name string, run func() error) {
		t.Helper()
		rb.mu.Lock()
		last, appends, waits := rb.appended[len(rb.appended)-1], len(rb.appended), len(rb.waits)
		rb.mu.Unlock()
		if err := run(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rb.mu.Lock()
		defer rb.mu.Unlock()
		if len(rb.appended) != appends {
			t.Fatalf("%s stored something", name)
		}
		if len(rb.waits) != waits+1 || rb.waits[waits] != last {
			t.Fatalf("%s waited for %v, not for the write it read (%v)", name, rb.waits[waits:], last)
		}
	}
	sub, err := st.Subscribe(ctx, &subscriptions.SubscribeRequest{Uid: "s", Cell: cell, Future: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	waitedForLast("a publication without an expiry", func() error {
		res, err := st.Publish(ctx, &subscriptions.PublishRequest{Uid: "p", Cell: cell})
		if err == nil && len(res.Matches) != 1 {
			err = fmt.Errorf("matched %d subscriptions, want the one", len(res.Matches))
		}
		return err
	})
	if _, err := st.Publish(ctx, &subscriptions.PublishRequest{Uid: "p", Cell: cell, Expires: time.Minute}); err != nil {
		t.Fatal(err)
	}
	waitedForLast("a subscription without a future", func() error {
		res, err := st.Subscribe(ctx, &subscriptions.SubscribeRequest{Uid: "s", Cell: cell, Past: time.Minute})
		if err == nil && len(res.Past) != 1 {
			err = fmt.Errorf("found %d publications, want the one", len(res.Past))
		}
		return err
	})
	waitedForLast("a replay", func() error {
		res, err := st.Replay(ctx, sub.Sub.Sid(), 0)
		if err == nil && len(res.Pubs) != 1 {
			err = fmt.Errorf("replayed %d publications, want the one", len(res.Pubs))
		}
		return err
	})
}
