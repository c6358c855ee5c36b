package lsm

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"testing"

	"github.com/seed84792017/cellcast/lsm/internal/manifest"
	"github.com/seed84792017/cellcast/lsm/vfs"
)

// TestCompactRunsDisjointJobsAtOnce: a manual Compact over two deep levels
// is cut into several jobs whose inputs, at both levels, cover every file
// once and whose key ranges do not meet; run four at a time, they leave
// what a map of the same writes holds, in one sorted level.
func TestCompactRunsDisjointJobsAtOnce(t *testing.T) {
	db := mustOpen(t, "/db", smallOptions(vfs.NewMem()))
	defer db.Close()
	m := newModel()
	rng := rand.New(rand.NewSource(7))
	// Write until two levels below L0 hold a shape Compact can cut (the
	// shape depends on when background compactions ran).
	var v *manifest.Version
	var lvl, out int
	for round := 0; ; round++ {
		for i := range 30000 {
			k := fmt.Appendf(nil, "key%06d", rng.Intn(20000))
			val := fmt.Appendf(nil, "v%d-%d-%090d", round, i, i)
			m.writeRandom(t, db, rng, 2, k, val)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		db.mu.Lock()
		v = db.vs.current
		v.Ref()
		db.mu.Unlock()
		lvl, out = -1, -1
		for l := 1; l < manifest.NumLevels; l++ {
			if v.NumFiles(l) > 0 {
				if lvl < 0 {
					lvl = l
				} else if out < 0 {
					out = l
				}
			}
		}
		if out >= 0 && len(db.splitCompaction(v, lvl, out, v.Levels[lvl])) >= 2 {
			break
		}
		db.deleteObsolete(v.Unref())
		if round == 10 {
			t.Fatalf("no shape to cut after %d rounds of writes (L%d into L%d)", round+1, lvl, out)
		}
	}
	jobs := db.splitCompaction(v, lvl, out, v.Levels[lvl])
	if len(jobs) < 2 {
		t.Fatalf("L%d (%d files) into L%d (%d files): %d job, want several", lvl, v.NumFiles(lvl), out, v.NumFiles(out), len(jobs))
	}
	seen := map[uint64]bool{}
	var prevHi []byte
	for i, c := range jobs {
		if c.level != lvl || c.out != out {
			t.Fatalf("job %d moves L%d into L%d", i, c.level, c.out)
		}
		for _, fs := range c.inputs {
			for _, f := range fs {
				if seen[f.Num] {
					t.Fatalf("table %d is in two jobs", f.Num)
				}
				seen[f.Num] = true
			}
		}
		lo, hi := manifest.KeyRange(c.inputs[0], c.inputs[1])
		if prevHi != nil && bytes.Compare(lo, prevHi) <= 0 {
			t.Fatalf("job %d starts at %q, not after the previous job's end %q", i, lo, prevHi)
		}
		prevHi = hi
	}
	for _, f := range v.Levels[lvl] {
		if !seen[f.Num] {
			t.Fatalf("L%d table %d is in no job", lvl, f.Num)
		}
	}
	for _, f := range v.Overlapping(out, nil, nil) {
		lo, hi := manifest.KeyRange(v.Levels[lvl])
		if f.Overlaps(lo, hi) && !seen[f.Num] {
			// A table between two jobs' ranges need not move; one inside must.
			for _, c := range jobs {
				clo, chi := manifest.KeyRange(c.inputs[0])
				if f.Overlaps(clo, chi) {
					t.Fatalf("L%d table %d overlaps a job's input but is not in it", out, f.Num)
				}
			}
		}
	}
	db.deleteObsolete(v.Unref())

	if err := db.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	db.mu.Lock()
	cur := db.vs.current
	for l := 0; l < manifest.NumLevels-1; l++ {
		if cur.NumFiles(l) > 0 {
			t.Errorf("after Compact L%d holds %d tables", l, cur.NumFiles(l))
		}
	}
	last := cur.Levels[manifest.NumLevels-1]
	for i := 1; i < len(last); i++ {
		if bytes.Compare(last[i-1].Largest.UserKey, last[i].Smallest.UserKey) >= 0 {
			t.Errorf("last level tables %d and %d overlap", last[i-1].Num, last[i].Num)
		}
	}
	db.mu.Unlock()
	for i := range 20000 {
		k := fmt.Appendf(nil, "key%06d", i)
		want, ok := m.get(k)
		got, err := db.Get(k)
		if ok != (err == nil) || (ok && !bytes.Equal(got, want)) {
			t.Fatalf("%s: got %q, %v; want %q, found %v", k, got, err, want, ok)
		}
	}
}
