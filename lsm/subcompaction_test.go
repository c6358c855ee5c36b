package lsm

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"github.com/seed84792017/cellcast/lsm/internal/manifest"
	"github.com/seed84792017/cellcast/lsm/vfs"
)

// TestL0CompactionsRunInRanges: with a base level of many tables, L0
// compactions are cut into key ranges that run at once. Every cut plan
// seen covers the keys once, in order, with each base-level table in one
// range; and after many such compactions, with deletes, merges and a
// snapshot, the DB reads as a map of the same writes, by Get and by a
// scan, at the snapshot too.
func TestL0CompactionsRunInRanges(t *testing.T) {
	fs := vfs.NewMem()
	m := newModel()
	rng := rand.New(rand.NewSource(11))
	i := 0
	write := func(db *DB, n int, each func()) {
		for end := i + n; i < end; i++ {
			k := fmt.Appendf(nil, "key%06d", rng.Intn(30000))
			v := fmt.Appendf(nil, "v%d-%060d", i, i)
			m.writeRandom(t, db, rng, 1, k, v)
			if each != nil && i%5000 == 4999 {
				each()
			}
		}
	}
	closeDB := func(db *DB) {
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The base level fills with tables, enough that L0's slices span
	// several (ranges need a slice of four).
	opts := func() *Options {
		o := smallOptions(fs)
		o.LBaseMaxBytes = 4 << 20
		return o
	}
	db := mustOpen(t, "/db", opts())
	write(db, 40000, nil)
	closeDB(db)
	// L0 backs up under a threshold no flush reaches: only a backlogged
	// L0 (twice its threshold) is cut into ranges, and a run whose
	// compactions keep up may never have one.
	held := opts()
	held.L0CompactionThreshold, held.L0SlowdownWritesThreshold, held.L0StopWritesThreshold = 1000, 1000, 1000
	db = mustOpen(t, "/db", held)
	write(db, 10000, nil)
	closeDB(db)
	db = mustOpen(t, "/db", opts())
	defer db.Close()
	plans := checkSubRanges(t, db)
	snap, atSnap := db.NewSnapshot(), m.clone()
	defer snap.Close()
	write(db, 30000, func() { plans += checkSubRanges(t, db) })
	if plans == 0 {
		t.Fatal("no L0 compaction was cut: the base level never had tables enough")
	}
	if got := db.Metrics().Subcompactions; got == 0 {
		t.Fatal("no L0 compaction ran in ranges")
	}
	readsAs(t, db, nil, m)
	readsAs(t, db, snap, atSnap)
}

// checkSubRanges plans the cut of a compaction of all of L0 into the base
// level of the current version and checks it; it returns 1 if there was
// more than one range.
func checkSubRanges(t *testing.T, db *DB) int {
	t.Helper()
	db.mu.Lock()
	defer db.mu.Unlock()
	v := db.vs.current
	base := db.opts.levelTargets(v).base
	below := v.Levels[base]
	c := &compaction{level: 0, out: base, version: v, inputs: [2][]*manifest.FileMetadata{v.Levels[0], below}}
	ranges := db.subRanges(c)
	if len(ranges) > db.opts.CompactConcurrency {
		t.Fatalf("%d ranges, more than CompactConcurrency %d", len(ranges), db.opts.CompactConcurrency)
	}
	if ranges[0].lo != nil || ranges[len(ranges)-1].hi != nil {
		t.Fatalf("the ranges do not reach both ends: %q", ranges)
	}
	n := 0
	for i, r := range ranges {
		if i > 0 && !bytes.Equal(r.lo, ranges[i-1].hi) {
			t.Fatalf("range %d starts at %q, the one before ends at %q", i, r.lo, ranges[i-1].hi)
		}
		if r.lo != nil && r.hi != nil && bytes.Compare(r.lo, r.hi) >= 0 {
			t.Fatalf("range %d is empty: [%q, %q)", i, r.lo, r.hi)
		}
		for _, f := range r.within(below) {
			if (r.lo != nil && bytes.Compare(f.Smallest.UserKey, r.lo) < 0) || (r.hi != nil && bytes.Compare(f.Largest.UserKey, r.hi) >= 0) {
				t.Fatalf("table %d [%q, %q] crosses range %d [%q, %q)", f.Num, f.Smallest.UserKey, f.Largest.UserKey, i, r.lo, r.hi)
			}
			n++
		}
	}
	if n != len(below) {
		t.Fatalf("the ranges hold %d of the base level's %d tables", n, len(below))
	}
	if len(ranges) > 1 {
		return 1
	}
	return 0
}

// readsAs checks that db (at snap, if not nil) holds exactly what m does.
func readsAs(t *testing.T, db *DB, snap *Snapshot, m *model) {
	t.Helper()
	var it *Iterator
	var err error
	if snap != nil {
		it, err = snap.NewIter(nil)
	} else {
		it, err = db.NewIter(nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	want := m.keysIn(nil, nil)
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(want) || string(it.Key()) != want[i] {
			t.Fatalf("scan: key %d is %q, want %q", i, it.Key(), want[min(i, len(want)-1)])
		}
		if v, _ := m.get(it.Key()); !bytes.Equal(it.Value(), v) {
			t.Fatalf("scan: %q = %q, want %q", it.Key(), it.Value(), v)
		}
		i++
	}
	if it.Error() != nil || i != len(want) {
		t.Fatalf("scan: %d keys of %d, %v", i, len(want), it.Error())
	}
	for _, k := range want {
		var got []byte
		if snap != nil {
			got, err = snap.Get([]byte(k))
		} else {
			got, err = db.Get([]byte(k))
		}
		if v, _ := m.get([]byte(k)); err != nil || !bytes.Equal(got, v) {
			t.Fatalf("Get %q = %q, %v; want %q", k, got, err, v)
		}
	}
}
