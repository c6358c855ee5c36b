package catalog

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/secondary"
	"github.com/seed84792017/cellcast/subscriptions"
)

// fakeStore is a Source holding pubs, scanned as of asOf.
type fakeStore struct {
	pubs []subscriptions.Publication
	asOf int64
	fail error // returned by the scan, when set
}

func (s *fakeStore) ScanPublications(ctx context.Context, fn func(*subscriptions.Publication) error) (int64, error) {
	for i := range s.pubs {
		if p := s.pubs[i]; p.Tp < s.asOf && p.Tmax > s.asOf {
			if err := fn(&p); err != nil {
				return 0, err
			}
		}
	}
	return s.asOf, s.fail
}

// TestReconcileMatchesOracle: after a crash the store and the catalog
// disagree at random (rows missing, rows of writes never acknowledged,
// expired rows, rows catalogued after the scan began); Reconcile leaves in
// the catalog exactly the publications live in the store, plus the later
// ones, and queries answer what a scan of the store does.
func TestReconcileMatchesOracle(t *testing.T) {
	for _, s := range []secondary.Strategy{secondary.Composite, secondary.Embedded, secondary.Eager} {
		t.Run(string(s), func(t *testing.T) {
			for seed := range uint64(3) {
				checkReconcile(t, s, seed, true)
				checkReconcile(t, s, seed, false)
			}
		})
	}
}

func checkReconcile(t *testing.T, s secondary.Strategy, seed uint64, synced bool) {
	rng := rand.New(rand.NewPCG(seed, 11))
	var now atomic.Int64
	now.Store(1e18)
	// No janitor: rows it deleted meanwhile would not be Reconcile's.
	cfg := Config{Indexes: []Index{{AttrUID, s}, {"category", s}, {AttrTp, s}}, Now: now.Load, Sync: synced, janitorEvery: time.Hour}
	c, err := Open(t.TempDir(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	src := &fakeStore{}
	var all []subscriptions.Publication
	catalogued := map[string]bool{}
	tp := now.Load() - 1e12
	for i := range 400 {
		tp += 1 + rng.Int64N(1e9)
		p := subscriptions.Publication{Uid: fmt.Sprint("u", rng.IntN(5)), Cell: subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1, uint32(1 + rng.IntN(9))}},
			Tp: tp, Tmax: tp + rng.Int64N(2e12), Desc: fmt.Sprint("p", i), Attrs: map[string]string{"category": fmt.Sprint("c", rng.IntN(3))}}
		all = append(all, p)
		inStore := rng.IntN(4) != 0
		if inStore {
			src.pubs = append(src.pubs, p)
		}
		// The catalog holds most stored publications, and some never stored.
		if (inStore && rng.IntN(3) != 0) || (!inStore && rng.IntN(2) == 0) {
			if err := c.Add(&p); err != nil {
				t.Fatal(err)
			}
			catalogued[p.Pid()] = true
		}
	}
	// The scan happens before the last tenth were published: those are
	// catalogued while Reconcile runs, and the store's scan does not see them.
	src.asOf = all[len(all)*9/10].Tp
	now.Store(src.asOf)
	want := map[string]bool{}
	for _, p := range all {
		switch {
		case p.Tp >= src.asOf:
			want[p.Pid()] = catalogued[p.Pid()]
		case p.Tmax > src.asOf:
			want[p.Pid()] = slices.ContainsFunc(src.pubs, func(q subscriptions.Publication) bool { return q.Tp == p.Tp })
		}
	}
	stats, err := c.Reconcile(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	added, deleted, rewritten := 0, 0, 0
	for _, p := range all {
		_, err := c.t.Get(p.Pid())
		has := err == nil
		if err != nil && !errors.Is(err, secondary.ErrNotFound) {
			t.Fatal(err)
		}
		w, unexpired := want[p.Pid()]
		if unexpired && has != w {
			t.Fatalf("seed %d: %s (tp %d, stored %v, catalogued %v): in the catalog %v after Reconcile, want %v", seed, p.Pid(), p.Tp, w, catalogued[p.Pid()], has, w)
		}
		if !unexpired && has {
			t.Fatalf("seed %d: expired %s still catalogued", seed, p.Pid())
		}
		if has && !catalogued[p.Pid()] {
			added++
		}
		if p.Tp < src.asOf && want[p.Pid()] {
			rewritten++
		}
		if !has && catalogued[p.Pid()] {
			deleted++
		}
	}
	wantStats := ReconcileStats{Added: added, Deleted: deleted}
	if !synced {
		// Every live stored publication is written again.
		wantStats = ReconcileStats{Rewritten: rewritten, Deleted: deleted}
	}
	if stats != wantStats {
		t.Fatalf("seed %d, synced %v: stats %+v, want %+v", seed, synced, stats, wantStats)
	}
	if added == 0 || deleted == 0 {
		t.Fatalf("seed %d: nothing to reconcile (%d added, %d deleted): the test checks nothing", seed, added, deleted)
	}
	var kept []subscriptions.Publication
	for _, p := range all {
		if want[p.Pid()] {
			kept = append(kept, p)
		}
	}
	for u := range 5 {
		uid := fmt.Sprint("u", u)
		v := String(uid)
		got, err := c.Find(Query{Attr: AttrUID, Eq: &v, K: MaxK})
		if err != nil {
			t.Fatal(err)
		}
		if w := oracle(kept, now.Load(), func(p *subscriptions.Publication) bool { return p.Uid == uid }, MaxK); !slices.Equal(pids(got), w) {
			t.Fatalf("seed %d: uid %s: query %v, oracle %v", seed, uid, pids(got), w)
		}
	}
	// A second run has nothing left to do but the rewrite.
	wantStats = ReconcileStats{}
	if !synced {
		wantStats.Rewritten = rewritten
	}
	if again, err := c.Reconcile(context.Background(), src); err != nil || again != wantStats {
		t.Fatalf("seed %d, synced %v: second Reconcile: %+v, %v", seed, synced, again, err)
	}
}

// TestReconcileScanError: a failed scan is returned and deletes nothing.
func TestReconcileScanError(t *testing.T) {
	c, err := Open(t.TempDir(), Config{Indexes: []Index{{AttrUID, secondary.Composite}}, Now: func() int64 { return 10 }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p := subscriptions.Publication{Uid: "u", Cell: subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1}}, Tp: 5, Tmax: 100}
	if err := c.Add(&p); err != nil {
		t.Fatal(err)
	}
	broken := errors.New("disk on fire")
	if _, err := c.Reconcile(context.Background(), &fakeStore{asOf: 20, fail: broken}); !errors.Is(err, broken) {
		t.Fatalf("Reconcile: %v, want the scan's error", err)
	}
	if _, err := c.t.Get(p.Pid()); err != nil {
		t.Fatalf("a failed scan deleted a row: %v", err)
	}
}
