package lsm

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"math/rand"
	"sort"
	"testing"

	"github.com/seed84792017/cellcast/lsm/internal/base"
	"github.com/seed84792017/cellcast/lsm/internal/manifest"
	"github.com/seed84792017/cellcast/lsm/vfs"
)

func sliceKey(i int) []byte { return fmt.Appendf(nil, "k%05d", i) }

// randomBase returns sorted, disjoint base-level tables over keys below n.
func randomBase(rng *rand.Rand, n int) []*manifest.FileMetadata {
	ks := rng.Perm(n)[:2+rng.Intn(400)]
	sort.Ints(ks)
	var out []*manifest.FileMetadata
	for i := 0; i+1 < len(ks); i += 2 {
		out = append(out, &manifest.FileMetadata{Num: uint64(1000 + i), Size: uint64(1 + rng.Intn(2000)),
			Smallest: base.InternalKey{UserKey: sliceKey(ks[i])}, Largest: base.InternalKey{UserKey: sliceKey(ks[i+1])}})
	}
	return out
}

// oracleCuts restates the rule independently: a slice ends after a base
// table whose largest key's FNV-1a hash, mixed by MurmurHash3's
// finalizer, is 0 modulo the span, and after the last table. The span is
// the power of two from 4 up that leaves 6 to 12 slices.
func oracleCuts(b []*manifest.FileMetadata) [][]byte {
	span := oracleSpan(len(b))
	var cuts [][]byte
	for i, f := range b {
		h := fnv.New64a()
		h.Write(f.Largest.UserKey)
		x := h.Sum64()
		x = (x ^ x>>33) * 0xff51afd7ed558ccd
		x = (x ^ x>>33) * 0xc4ceb9fe1a85ec53
		if i == len(b)-1 || (x^x>>33)%span == 0 {
			cuts = append(cuts, f.Largest.UserKey)
		}
	}
	return cuts
}

func oracleSpan(n int) uint64 {
	span := uint64(4)
	for n/int(span) >= 12 {
		span *= 2
	}
	return span
}

// TestSlicesSpanTheirTablesOnAverage: the cut rule picks about one base
// table in span for keys shaped like Cellcast's and dbbench's, and the
// cuts of a span are among those of half of it.
func TestSlicesSpanTheirTablesOnAverage(t *testing.T) {
	for _, format := range []string{"key%06d", "k%016d", "\x00\x01cell/%d/sub"} {
		for _, span := range []int{4, 8, 16, 32} {
			cuts := 0
			const n = 40000
			for i := 0; i < n; i++ {
				k := fmt.Appendf(nil, format, i)
				if endsSlice(k, span) {
					cuts++
					if !endsSlice(k, span/2) {
						t.Fatalf("keys %q: %q ends a slice of %d tables, not one of %d", format, k, span, span/2)
					}
				}
			}
			if got := float64(n) / float64(cuts); got < 0.8*float64(span) || got > 1.2*float64(span) {
				t.Errorf("keys %q: a cut every %.2f tables, want about %d", format, got, span)
			}
		}
	}
}

// flushPieces cuts sorted keys as writeTables does with splitAtBase.
func flushPieces(b []*manifest.FileMetadata, keys [][]byte) [][][]byte {
	stop := splitAtBase(b)
	var pieces [][][]byte
	for _, k := range keys {
		s := stop != nil && stop(k)
		if len(pieces) == 0 || s {
			pieces = append(pieces, nil)
		}
		pieces[len(pieces)-1] = append(pieces[len(pieces)-1], k)
	}
	return pieces
}

func sortedKeys(rng *rand.Rand, n, count int) [][]byte {
	ks := rng.Perm(n)[:count]
	sort.Ints(ks)
	out := make([][]byte, len(ks))
	for i, k := range ks {
		out[i] = sliceKey(k)
	}
	return out
}

// TestFlushesCutAtSliceEnds: a flush is cut exactly where a slice ends,
// never within one; and rewriting one slice's base tables, as its
// compaction does, moves no other cut while the base level keeps its span.
func TestFlushesCutAtSliceEnds(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for round := 0; round < 300; round++ {
		b := randomBase(rng, 5000)
		cuts := oracleCuts(b)
		pieces := flushPieces(b, sortedKeys(rng, 5000, 1+rng.Intn(2000)))
		for i, p := range pieces {
			for _, c := range cuts {
				if bytes.Compare(p[0], c) <= 0 && bytes.Compare(c, p[len(p)-1]) < 0 {
					t.Fatalf("round %d: piece %d [%s, %s] spans the cut %s", round, i, p[0], p[len(p)-1], c)
				}
			}
			if i == 0 {
				continue
			}
			prev := pieces[i-1]
			between := false
			for _, c := range cuts {
				between = between || (bytes.Compare(prev[len(prev)-1], c) <= 0 && bytes.Compare(c, p[0]) < 0)
			}
			if !between {
				t.Fatalf("round %d: pieces %d and %d split with no cut between %s and %s", round, i-1, i, prev[len(prev)-1], p[0])
			}
		}

		// Rewrite the tables of one slice, keeping its end, as a
		// compaction of it does.
		if len(cuts) < 2 {
			continue
		}
		j := rng.Intn(len(cuts))
		var lo []byte
		if j > 0 {
			lo = cuts[j-1]
		}
		var kept, in []*manifest.FileMetadata
		for _, f := range b {
			if (lo == nil || bytes.Compare(f.Smallest.UserKey, lo) > 0) && bytes.Compare(f.Largest.UserKey, cuts[j]) <= 0 {
				in = append(in, f)
			} else {
				kept = append(kept, f)
			}
		}
		first := in[0].Smallest.UserKey
		var ks [][]byte
		for _, k := range sortedKeys(rng, 5000, 400) {
			if bytes.Compare(k, first) > 0 && bytes.Compare(k, cuts[j]) < 0 {
				ks = append(ks, k)
			}
		}
		ks = append(ks, cuts[j])
		for len(ks) > 0 { // new tables: consecutive runs of ks
			n := 1 + rng.Intn(len(ks))
			kept = append(kept, &manifest.FileMetadata{Smallest: base.InternalKey{UserKey: ks[0]}, Largest: base.InternalKey{UserKey: ks[n-1]}})
			ks = ks[n:]
		}
		sort.Slice(kept, func(a, b int) bool { return bytes.Compare(kept[a].Smallest.UserKey, kept[b].Smallest.UserKey) < 0 })
		if oracleSpan(len(kept)) != oracleSpan(len(b)) {
			continue // the base level crossed a span: cuts thin out or thicken everywhere
		}
		after := map[string]bool{}
		for _, c := range oracleCuts(kept) {
			after[string(c)] = true
		}
		for i, c := range cuts {
			if !after[string(c)] {
				t.Fatalf("round %d: rewriting slice %d lost the cut %s of slice %d", round, j, c, i)
			}
		}
	}
}

// baseBytes sums the base tables within (lo, hi]; nil bounds are open.
func baseBytes(b []*manifest.FileMetadata, lo, hi []byte) uint64 {
	var n uint64
	for _, f := range b {
		if (lo == nil || bytes.Compare(f.Smallest.UserKey, lo) > 0) && (hi == nil || bytes.Compare(f.Largest.UserKey, hi) <= 0) {
			n += f.Size
		}
	}
	return n
}

// TestL0SliceNeverLeavesAnOlderVersionAbove: on L0s flushed along base
// levels that change between flushes (so tables straddle today's cuts),
// the pick holds the oldest table, stays within the slices around it,
// which are as few as hold minBytes of base, and never leaves behind a
// table that is older than one it takes and overlaps it. When every flush
// cut along one base level, it takes the whole stack of those slices.
func TestL0SliceNeverLeavesAnOlderVersionAbove(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	backwards := 0
	defer func() {
		if !t.Failed() && backwards == 0 {
			t.Error("no pick joined slices backwards: that case went untested")
		}
	}()
	for round := 0; round < 400; round++ {
		aligned := round%2 == 0
		minBytes := uint64(1000 + rng.Intn(40000))
		b := randomBase(rng, 5000)
		var l0 []*manifest.FileMetadata
		seq := uint64(1)
		for f := 1 + rng.Intn(10); f > 0; f-- {
			if !aligned && rng.Intn(2) == 0 {
				b = randomBase(rng, 5000)
			}
			// A flush's pieces are ordered by their newest writes, not by
			// key: any of them may be the oldest table.
			pieces := flushPieces(b, sortedKeys(rng, 5000, 1+rng.Intn(300)))
			for _, i := range rng.Perm(len(pieces)) {
				p := pieces[i]
				l0 = append(l0, &manifest.FileMetadata{Num: uint64(len(l0) + 1),
					Smallest: base.InternalKey{UserKey: p[0]}, Largest: base.InternalKey{UserKey: p[len(p)-1]},
					SmallestSeq: seq, LargestSeq: seq + uint64(len(p)) - 1})
				seq += uint64(len(p))
			}
		}
		seed := l0[0]
		lo, hi := sliceAround(b, seed, minBytes)

		// The slices: bounded by cuts, around the seed, as few as hold
		// minBytes (dropping the outermost would hold less).
		cuts := oracleCuts(b)
		idx := map[string]int{}
		for i, c := range cuts {
			idx[string(c)] = i
		}
		li, hiIdx := -1, len(cuts)
		if lo != nil {
			i, ok := idx[string(lo)]
			if !ok {
				t.Fatalf("round %d: lower bound %s is no cut", round, lo)
			}
			li = i
		}
		if hi != nil {
			i, ok := idx[string(hi)]
			if !ok {
				t.Fatalf("round %d: upper bound %s is no cut", round, hi)
			}
			hiIdx = i
		}
		if (lo != nil && bytes.Compare(lo, seed.Smallest.UserKey) >= 0) || (hi != nil && bytes.Compare(hi, seed.Largest.UserKey) < 0) {
			t.Fatalf("round %d: slices (%s, %s] do not hold the oldest table %s", round, lo, hi, seed)
		}
		size := baseBytes(b, lo, hi)
		if size < minBytes && (lo != nil || hi != nil) {
			t.Fatalf("round %d: slices (%s, %s] hold %d bytes of base, under %d, with more to join", round, lo, hi, size, minBytes)
		}
		if hi != nil && hiIdx > 0 && bytes.Compare(cuts[hiIdx-1], seed.Largest.UserKey) >= 0 && baseBytes(b, lo, cuts[hiIdx-1]) >= minBytes {
			t.Fatalf("round %d: slices (%s, %s] joined one past %d bytes", round, lo, hi, minBytes)
		}
		if lo != nil && li+1 < len(cuts) && bytes.Compare(cuts[li+1], seed.Smallest.UserKey) < 0 {
			// Joined backwards: only at the end, and no further than needed.
			if hi != nil {
				t.Fatalf("round %d: slices (%s, %s] joined one before the oldest table's with the end not reached", round, lo, hi)
			}
			if baseBytes(b, cuts[li+1], nil) >= minBytes {
				t.Fatalf("round %d: slices (%s, end] joined one before past %d bytes", round, lo, minBytes)
			}
			backwards++
		}

		got := l0Slice(l0, b, minBytes)
		taken := map[*manifest.FileMetadata]bool{}
		for _, f := range got {
			taken[f] = true
		}
		if !taken[seed] {
			t.Fatalf("round %d: the oldest table is not taken", round)
		}
		overlap := func(a, b *manifest.FileMetadata) bool {
			return bytes.Compare(a.Smallest.UserKey, b.Largest.UserKey) <= 0 && bytes.Compare(b.Smallest.UserKey, a.Largest.UserKey) <= 0
		}
		for i, g := range l0 {
			in := (lo == nil || bytes.Compare(g.Smallest.UserKey, lo) > 0) && (hi == nil || bytes.Compare(g.Largest.UserKey, hi) <= 0)
			if taken[g] && g != seed && !in {
				t.Fatalf("round %d: took %s outside the slices (%s, %s]", round, g, lo, hi)
			}
			for _, h := range l0[:i] {
				if taken[g] && !taken[h] && overlap(g, h) {
					t.Fatalf("round %d: took %s but left the older %s it overlaps", round, g, h)
				}
			}
			if aligned && in && !taken[g] {
				t.Fatalf("round %d: cut along one base level, left %s of the slices (%s, %s]", round, g, lo, hi)
			}
		}
	}
}

// TestBaseLevelStaysWhole: under random writes that compact L0 slice by
// slice for a long while, the base level keeps tables of about the target
// size and slices of several tables: the cuts a compaction leaves inside
// its slices do not pile up into one slice per ever smaller table.
func TestBaseLevelStaysWhole(t *testing.T) {
	fs := vfs.NewMem()
	o := smallOptions(fs)
	o.LBaseMaxBytes = 4 << 20
	db := mustOpen(t, "/db", o)
	defer db.Close()
	rng := rand.New(rand.NewSource(5))
	v := make([]byte, 100)
	for i := 0; i < opsScale(150000, 5); i++ {
		rng.Read(v[:50])
		if err := db.Set(fmt.Appendf(nil, "key%07d", rng.Intn(40000)), v, NoSync); err != nil {
			t.Fatal(err)
		}
	}
	db.mu.Lock()
	ver := db.vs.current
	b := ver.Levels[db.opts.levelTargets(ver).base]
	cuts := len(sliceCuts(b))
	db.mu.Unlock()
	avg := sumSize(b) / uint64(len(b))
	t.Logf("base level: %d tables of %d bytes on average, %d slices", len(b), avg, cuts)
	if avg < uint64(o.TargetFileSize)/2 {
		t.Errorf("base tables average %d bytes, under half the target %d", avg, o.TargetFileSize)
	}
	if cuts*2 > len(b) {
		t.Errorf("%d slices over %d base tables: fewer than two tables a slice", cuts, len(b))
	}
}
