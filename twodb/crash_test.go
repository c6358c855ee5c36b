package twodb

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/lsm"
	"github.com/seed84792017/cellcast/lsm/vfs"
	"github.com/seed84792017/cellcast/subscriptions"
)

// holdPubs holds every Wait of a write to the publications engine until
// open closes: the write is applied (visible) but not durable.
type holdPubs struct {
	listdb.Backend
	open    chan struct{}
	waiting atomic.Int64
}

func (h *holdPubs) Wait(c listdb.Commit, sync bool) error {
	if listdb.List(c.Engine) == listdb.Pubs {
		h.waiting.Add(1)
		<-h.open
	}
	return h.Backend.Wait(c, sync)
}

// TestCrashKeepsWhatAnAnswerReported: an operation on one engine reads the
// other, and may report a record there that is applied but not yet durable
// (a publication whose own fsync is still pending). Its answer must not
// go out before that record is durable too, or a crash right after the
// answer loses a publication an acknowledged subscribe returned. With one
// engine the log is a prefix and this holds by itself; with two, Wait
// syncs the other engine's log up to where it stood at the write.
func TestCrashKeepsWhatAnAnswerReported(t *testing.T) {
	// Only the synced mode survives the machine crash CrashClone simulates
	// (--durability os leaves the log in the OS's cache).
	for _, mode := range []listdb.Durability{listdb.Synced} {
		t.Run(mode.String(), func(t *testing.T) {
			ctx := context.Background()
			cell := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{3, 1}}
			fs := vfs.NewMem()
			cfg := listdb.Config{Durability: mode}
			base, err := Open("/db", cfg, &lsm.Options{FS: fs})
			if err != nil {
				t.Fatal(err)
			}
			h := &holdPubs{Backend: base.Backend(), open: make(chan struct{})}
			st, err := listdb.NewStore(h, cfg)
			if err != nil {
				t.Fatal(err)
			}
			released := false
			release := func() {
				if !released {
					released = true
					close(h.open)
				}
			}
			defer func() { release(); st.Close() }()
			pub := &subscriptions.PublishRequest{Uid: "p", Cell: cell, Expires: time.Minute}
			sub := &subscriptions.SubscribeRequest{Uid: "s", Cell: cell, Past: time.Minute, Future: time.Minute}
			// Warm up: raise the store's high-water marks and persist the
			// clock floor now, since those synced metadata writes (in the
			// publications engine) would sync the held publication as a
			// side effect.
			warm := make(chan error, 1)
			go func() { _, err := st.Publish(ctx, pub); warm <- err }()
			if !waitFor(func() bool { return h.waiting.Load() == 1 }) {
				t.Fatal("the warm-up publish never waited for its log")
			}
			if _, err := st.Subscribe(ctx, sub); err != nil {
				t.Fatal(err)
			}
			// Now the publication whose fsync is held.
			held := make(chan error, 1)
			var p subscriptions.Publication
			go func() {
				res, err := st.Publish(ctx, &subscriptions.PublishRequest{Uid: "p", Cell: cell, Expires: time.Minute, Desc: "held"})
				if err == nil {
					p = res.Pub
				}
				held <- err
			}()
			if !waitFor(func() bool { return h.waiting.Load() == 2 }) {
				t.Fatal("the publish never waited for its log")
			}
			res, err := st.Subscribe(ctx, sub)
			if err != nil {
				t.Fatal(err)
			}
			var reported *subscriptions.Publication
			for i := range res.Past {
				if res.Past[i].Desc == "held" {
					reported = &res.Past[i]
				}
			}
			if reported == nil {
				t.Fatalf("the acknowledged subscribe did not report the applied publication: %d results", len(res.Past))
			}
			crashed := fs.CrashClone(vfs.CrashOptions{})
			release()
			if err := errors.Join(<-warm, <-held); err != nil {
				t.Fatal(err)
			}
			if p.Tp != reported.Tp {
				t.Fatalf("held publication stamped %d, reported %d", p.Tp, reported.Tp)
			}

			after, err := Open("/db", cfg, &lsm.Options{FS: crashed})
			if err != nil {
				t.Fatal(err)
			}
			defer after.Close()
			if _, err := after.Lookup(ctx, subscriptions.FormatID(res.Sub.Ts, cell)); err != nil {
				t.Fatalf("the acknowledged subscription is gone after the crash: %v", err)
			}
			again, err := after.Subscribe(ctx, sub)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, q := range again.Past {
				found = found || q.Tp == reported.Tp
			}
			if !found {
				t.Fatalf("publication %s, reported by an acknowledged subscribe, is gone after the crash", reported.Pid())
			}
			if again.Sub.Ts <= res.Sub.Ts {
				t.Fatalf("stamps went back after the crash: %d after %d", again.Sub.Ts, res.Sub.Ts)
			}
		})
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(cond func() bool) bool {
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}
