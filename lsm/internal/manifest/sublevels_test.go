package manifest

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/seed84792017/cellcast/lsm/internal/base"
)

// randomL0 builds the L0 of a random history: flushes, each cut at random
// keys into disjoint tables with one sequence range per flush, and then a
// random part of the tables gone (compacted away). It returns the tables
// sorted as a Version sorts L0.
func randomL0(rng *rand.Rand) []*FileMetadata {
	key := func(i int) []byte { return fmt.Appendf(nil, "k%04d", i) }
	var out []*FileMetadata
	num, seq := uint64(1), uint64(1)
	for f := rng.Intn(12); f > 0; f-- {
		// One flush: sorted distinct keys, cut into runs.
		ks := rng.Perm(1000)[:1+rng.Intn(60)]
		sort.Ints(ks)
		for len(ks) > 0 {
			n := 1 + rng.Intn(len(ks))
			lo, hi := ks[0], ks[n-1]
			m := &FileMetadata{Num: num, Smallest: base.MakeKey(key(lo), seq+uint64(rng.Intn(n)), base.KindSet),
				Largest: base.MakeKey(key(hi), seq, base.KindSet), SmallestSeq: seq, LargestSeq: seq + uint64(n) - 1}
			num++
			if rng.Intn(4) != 0 {
				out = append(out, m)
			}
			ks = ks[n:]
		}
		seq += 100
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LargestSeq < out[j].LargestSeq })
	return out
}

// TestSublevelsAgainstPairs checks Sublevels on random L0s against a
// pairwise oracle: every table in one sublevel, each sublevel sorted and
// disjoint, of two overlapping tables the newer one higher, and Find
// answering what a scan of the sublevel would.
func TestSublevelsAgainstPairs(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < 500; round++ {
		l0 := randomL0(rng)
		subs := Sublevels(l0)
		where := map[*FileMetadata]int{}
		for s, run := range subs {
			if len(run) == 0 {
				t.Fatalf("round %d: sublevel %d is empty", round, s)
			}
			for i, f := range run {
				if _, dup := where[f]; dup {
					t.Fatalf("round %d: %s in two sublevels", round, f)
				}
				where[f] = s
				if i > 0 && bytes.Compare(run[i-1].Largest.UserKey, f.Smallest.UserKey) >= 0 {
					t.Fatalf("round %d: sublevel %d: %s and %s overlap or are out of order", round, s, run[i-1], f)
				}
			}
		}
		if len(where) != len(l0) {
			t.Fatalf("round %d: %d of %d tables placed", round, len(where), len(l0))
		}
		for i, a := range l0 {
			for _, b := range l0[i+1:] {
				overlap := bytes.Compare(a.Smallest.UserKey, b.Largest.UserKey) <= 0 && bytes.Compare(b.Smallest.UserKey, a.Largest.UserKey) <= 0
				if overlap && where[a] >= where[b] {
					t.Fatalf("round %d: %s (sublevel %d) is older than %s (sublevel %d), which it overlaps", round, a, where[a], b, where[b])
				}
			}
		}
		for probe := 0; probe < 50; probe++ {
			k := fmt.Appendf(nil, "k%04d", rng.Intn(1001))
			for s, run := range subs {
				var want *FileMetadata
				for _, f := range run {
					if bytes.Compare(f.Smallest.UserKey, k) <= 0 && bytes.Compare(k, f.Largest.UserKey) <= 0 {
						want = f
					}
				}
				if got := Find(run, k); got != want {
					t.Fatalf("round %d: Find(sublevel %d, %s) = %v, want %v", round, s, k, got, want)
				}
			}
		}
	}
}

// TestApplyKeepsSublevels: a Version's sublevels follow its L0 through
// edits.
func TestApplyKeepsSublevels(t *testing.T) {
	v0 := &Version{}
	v0.refs.Store(1)
	a, b, c := meta(1, "a", "c", 1), meta(2, "d", "f", 2), meta(3, "b", "e", 3)
	v1, err := v0.Apply(&VersionEdit{Added: []NewFile{{0, a}, {0, b}, {0, c}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(v1.L0Sublevels); got != fmt.Sprint([][]*FileMetadata{{a, b}, {c}}) || v1.L0Depth() != 2 {
		t.Fatalf("sublevels %s, depth %d", got, v1.L0Depth())
	}
	v2, err := v1.Apply(&VersionEdit{Deleted: []DeletedFile{{0, 1}, {0, 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(v2.L0Sublevels); got != fmt.Sprint([][]*FileMetadata{{b}}) {
		t.Fatalf("after deleting two: sublevels %s", got)
	}
}
