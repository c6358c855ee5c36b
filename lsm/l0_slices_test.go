package lsm

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"testing"

	"github.com/seed84792017/cellcast/lsm/internal/base"
	"github.com/seed84792017/cellcast/lsm/internal/manifest"
	"github.com/seed84792017/cellcast/lsm/vfs"
)

func sliceKey(i int) []byte { return fmt.Appendf(nil, "k%05d", i) }

// randomBase returns sorted, disjoint base-level tables over keys below n,
// of sizes in [minSize, maxSize].
func randomBase(rng *rand.Rand, n, minSize, maxSize int) []*manifest.FileMetadata {
	ks := rng.Perm(n)[:2+rng.Intn(400)]
	sort.Ints(ks)
	var out []*manifest.FileMetadata
	for i := 0; i+1 < len(ks); i += 2 {
		out = append(out, &manifest.FileMetadata{Num: uint64(1000 + i), Size: uint64(minSize + rng.Intn(maxSize-minSize+1)),
			Smallest: base.InternalKey{UserKey: sliceKey(ks[i])}, Largest: base.InternalKey{UserKey: sliceKey(ks[i+1])}})
	}
	return out
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

// oracleCuts restates the rule: cut j (1 <= j < want) ends the first table,
// after the previous cut's and before the last, whose running size times
// want reaches j times the level's size.
func oracleCuts(b []*manifest.FileMetadata, want int) [][]byte {
	var total uint64
	for _, f := range b {
		total += f.Size
	}
	var cuts [][]byte
	next := 0
	for j := 1; j < want; j++ {
		var run uint64
		for i := 0; i < len(b)-1; i++ {
			run += b[i].Size
			if i >= next && run*uint64(want) >= total*uint64(j) {
				cuts = append(cuts, b[i].Largest.UserKey)
				next = i + 1
				break
			}
		}
	}
	return cuts
}

// slicesOf returns each base table's slice index under cuts, or -1 for a
// table that straddles a cut.
func slicesOf(b []*manifest.FileMetadata, cuts [][]byte) []int {
	out := make([]int, len(b))
	for i, f := range b {
		lo := sort.Search(len(cuts), func(j int) bool { return bytes.Compare(cuts[j], f.Smallest.UserKey) >= 0 })
		hi := sort.Search(len(cuts), func(j int) bool { return bytes.Compare(cuts[j], f.Largest.UserKey) >= 0 })
		out[i] = lo
		if lo != hi {
			out[i] = -1
		}
	}
	return out
}

// TestCutsSplitTheBaseLevelBySize: the cuts are the rule restated, and on
// base levels of tables of similar size they fit what they were cut for
// and a count one away, not two.
func TestCutsSplitTheBaseLevelBySize(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for round := 0; round < 500; round++ {
		b := randomBase(rng, 5000, 1, 2000)
		want := 1 + rng.Intn(maxSlices)
		cuts := balancedCuts(b, want)
		if got, exp := fmt.Sprintf("%s", cuts), fmt.Sprintf("%s", oracleCuts(b, want)); got != exp {
			t.Fatalf("round %d: %d slices of %d tables: cuts %s, want %s", round, want, len(b), got, exp)
		}
		for _, s := range slicesOf(b, cuts) {
			if s < 0 {
				t.Fatalf("round %d: a table straddles the cuts %s", round, cuts)
			}
		}
		even := randomBase(rng, 5000, 900, 1100)
		if len(even) < 8*want {
			continue
		}
		s := &baseSlices{level: 5, cuts: balancedCuts(even, want)}
		if !s.fits(5, even, want) {
			t.Fatalf("round %d: %d fresh slices of %d even tables do not fit", round, want, len(even))
		}
		if s.fits(4, even, want) || s.fits(5, even, want+2) || (want > 2 && s.fits(5, even, want-2)) {
			t.Fatalf("round %d: slices fit another level or a count two away", round)
		}
		if !s.fits(5, even, want+1) || (want > 1 && !s.fits(5, even, want-1)) {
			t.Fatalf("round %d: slices do not fit a count one away", round)
		}
	}
}

// TestSlicesStickUntilTheyNoLongerFit: rewriting one slice's base tables,
// as its compaction does (outputs end at its cut), keeps the cuts while
// every slice holds between half and twice its share; a slice grown past
// that, or a table across a cut, makes new ones.
func TestSlicesStickUntilTheyNoLongerFit(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	kept, grown := 0, 0
	for round := 0; round < 500; round++ {
		b := randomBase(rng, 50000, 900, 1100)
		want := 2 + rng.Intn(maxSlices-1)
		if len(b) < 8*want {
			continue
		}
		s := &baseSlices{level: 6, cuts: balancedCuts(b, want)}
		j := rng.Intn(want)
		lo, hi := bound(s.cuts, j-1), bound(s.cuts, j)
		var out []*manifest.FileMetadata
		var in uint64
		for _, f := range b {
			if (lo == nil || bytes.Compare(f.Smallest.UserKey, lo) > 0) && (hi == nil || bytes.Compare(f.Largest.UserKey, hi) <= 0) {
				in += f.Size
				continue
			}
			out = append(out, f)
		}
		// The slice's new tables: consecutive runs of new keys within it,
		// the last ending at its cut, holding scale times its old size.
		scale := 0.3 + 3*rng.Float64()
		var ks [][]byte
		for _, k := range sortedKeys(rng, 50000, 2000) {
			if (lo == nil || bytes.Compare(k, lo) > 0) && (hi == nil || bytes.Compare(k, hi) < 0) {
				ks = append(ks, k)
			}
		}
		if hi != nil {
			ks = append(ks, hi)
		}
		if len(ks) < 4 {
			continue
		}
		pieces := 1 + rng.Intn(len(ks)/2)
		per := uint64(scale*float64(in)) / uint64(pieces)
		for p := 0; p < pieces; p++ {
			a, z := p*len(ks)/pieces, (p+1)*len(ks)/pieces-1
			out = append(out, &manifest.FileMetadata{Size: per, Smallest: base.InternalKey{UserKey: ks[a]}, Largest: base.InternalKey{UserKey: ks[z]}})
		}
		sort.Slice(out, func(a, b int) bool { return bytes.Compare(out[a].Smallest.UserKey, out[b].Smallest.UserKey) < 0 })

		var total uint64
		sizes := make([]uint64, want)
		for i, si := range slicesOf(out, s.cuts) {
			if si < 0 {
				t.Fatalf("round %d: a rewritten table straddles a cut", round)
			}
			total += out[i].Size
			sizes[si] += out[i].Size
		}
		share, ok := total/uint64(want), true
		for _, n := range sizes {
			ok = ok && n >= share/2 && n <= 2*share
		}
		if got := s.fits(6, out, want); got != ok {
			t.Fatalf("round %d: slice sizes %v of share %d: fits %v, want %v", round, sizes, share, got, ok)
		}
		if ok {
			kept++
		} else {
			grown++
		}

		// A table across a cut never fits.
		c := s.cuts[rng.Intn(len(s.cuts))]
		across := append([]*manifest.FileMetadata(nil), out...)
		for i, f := range across {
			if bytes.Equal(f.Largest.UserKey, c) && i+1 < len(across) {
				merged := &manifest.FileMetadata{Size: f.Size + across[i+1].Size, Smallest: f.Smallest, Largest: across[i+1].Largest}
				across = append(append(across[:i:i], merged), across[i+2:]...)
				break
			}
		}
		if len(across) < len(out) && s.fits(6, across, want) {
			t.Fatalf("round %d: slices fit a table across the cut %s", round, c)
		}
	}
	if kept == 0 || grown == 0 {
		t.Fatalf("kept %d, grown %d: a case went untested", kept, grown)
	}
}

// TestFlushesCutAtSliceEnds: a flush is cut exactly where a slice ends,
// never within one.
func TestFlushesCutAtSliceEnds(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	for round := 0; round < 300; round++ {
		b := randomBase(rng, 5000, 1, 2000)
		cuts := balancedCuts(b, 1+rng.Intn(maxSlices))
		stop := splitAt(cuts)
		var pieces [][][]byte
		for _, k := range sortedKeys(rng, 5000, 1+rng.Intn(2000)) {
			if len(pieces) == 0 || (stop != nil && stop(k)) {
				pieces = append(pieces, nil)
			}
			pieces[len(pieces)-1] = append(pieces[len(pieces)-1], k)
		}
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
	}
}

// oracleStack restates l0Slice: within (lo, hi], oldest first, every table
// none of whose older overlapping tables was left.
func oracleStack(l0 []*manifest.FileMetadata, lo, hi []byte) []*manifest.FileMetadata {
	overlap := func(a, b *manifest.FileMetadata) bool {
		return bytes.Compare(a.Smallest.UserKey, b.Largest.UserKey) <= 0 && bytes.Compare(b.Smallest.UserKey, a.Largest.UserKey) <= 0
	}
	var out []*manifest.FileMetadata
	left := []*manifest.FileMetadata{}
	for _, g := range l0 {
		in := (lo == nil || bytes.Compare(g.Smallest.UserKey, lo) > 0) && (hi == nil || bytes.Compare(g.Largest.UserKey, hi) <= 0)
		blocked := false
		for _, h := range left {
			blocked = blocked || overlap(g, h)
		}
		if in && !blocked {
			out = append(out, g)
		} else {
			left = append(left, g)
		}
	}
	return out
}

// TestL0PickNeverLeavesAnOlderVersionAbove: on L0s flushed along base
// levels that change between flushes (so tables straddle today's cuts),
// the pick is one table's slice stack, never leaves behind a table older
// than one it takes that overlaps it, and moves at least as much L0 per
// byte of base as any other table's stack. When every flush cut along
// today's slices, it takes a whole stack.
func TestL0PickNeverLeavesAnOlderVersionAbove(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	ratio := func(got, b []*manifest.FileMetadata) float64 {
		lo, hi := manifest.KeyRange(got)
		var in, below uint64
		for _, f := range got {
			in += f.Size
		}
		for _, f := range b {
			if bytes.Compare(f.Smallest.UserKey, hi) <= 0 && bytes.Compare(lo, f.Largest.UserKey) <= 0 {
				below += f.Size
			}
		}
		return float64(in) / float64(below+1)
	}
	for round := 0; round < 400; round++ {
		aligned := round%2 == 0
		want := 1 + rng.Intn(maxSlices)
		b := randomBase(rng, 5000, 1, 2000)
		var l0 []*manifest.FileMetadata
		seq := uint64(1)
		for f := 1 + rng.Intn(10); f > 0; f-- {
			if !aligned && rng.Intn(2) == 0 {
				b = randomBase(rng, 5000, 1, 2000)
			}
			stop := splitAt(balancedCuts(b, want))
			var pieces [][][]byte
			for _, k := range sortedKeys(rng, 5000, 1+rng.Intn(300)) {
				if len(pieces) == 0 || (stop != nil && stop(k)) {
					pieces = append(pieces, nil)
				}
				pieces[len(pieces)-1] = append(pieces[len(pieces)-1], k)
			}
			// A flush's pieces are ordered by their newest writes, not by
			// key: any of them may be the oldest table.
			for _, i := range rng.Perm(len(pieces)) {
				p := pieces[i]
				l0 = append(l0, &manifest.FileMetadata{Num: uint64(len(l0) + 1), Size: uint64(len(p) * 100),
					Smallest: base.InternalKey{UserKey: p[0]}, Largest: base.InternalKey{UserKey: p[len(p)-1]},
					SmallestSeq: seq, LargestSeq: seq + uint64(len(p)) - 1})
				seq += uint64(len(p))
			}
		}
		cuts := balancedCuts(b, want)
		got := l0Pick(l0, b, cuts)
		if len(got) == 0 {
			t.Fatalf("round %d: nothing picked from %d tables", round, len(l0))
		}
		// It is the stack of the slices around one of its tables.
		var match bool
		for _, f := range got {
			a, z := sliceAround(cuts, f)
			if fmt.Sprint(oracleStack(l0, bound(cuts, a-1), bound(cuts, z))) == fmt.Sprint(got) {
				match = true
				break
			}
		}
		if !match {
			t.Fatalf("round %d: the pick %v is no table's slice stack", round, got)
		}
		taken := map[*manifest.FileMetadata]bool{}
		for _, f := range got {
			taken[f] = true
		}
		for i, g := range l0 {
			for _, h := range l0[:i] {
				if taken[g] && !taken[h] && bytes.Compare(g.Smallest.UserKey, h.Largest.UserKey) <= 0 && bytes.Compare(h.Smallest.UserKey, g.Largest.UserKey) <= 0 {
					t.Fatalf("round %d: took %s but left the older %s it overlaps", round, g, h)
				}
			}
		}
		for _, f := range l0 {
			a, z := sliceAround(cuts, f)
			other := oracleStack(l0, bound(cuts, a-1), bound(cuts, z))
			if slices.Contains(other, f) && ratio(got, b) < ratio(other, b) {
				t.Fatalf("round %d: the pick moves %.3f per byte of base, %s's stack %.3f", round, ratio(got, b), f, ratio(other, b))
			}
		}
		if aligned {
			// Every table lies within one slice: the pick is a whole
			// slice's L0.
			a, z := sliceAround(cuts, got[0])
			lo, hi := bound(cuts, a-1), bound(cuts, z)
			for _, g := range l0 {
				in := (lo == nil || bytes.Compare(g.Smallest.UserKey, lo) > 0) && (hi == nil || bytes.Compare(g.Largest.UserKey, hi) <= 0)
				if in && !taken[g] {
					t.Fatalf("round %d: cut along today's slices, left %s of the slice (%s, %s]", round, g, lo, hi)
				}
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
	cuts := len(db.currentSlices(ver).cuts)
	db.mu.Unlock()
	avg := sumSize(b) / uint64(len(b))
	t.Logf("base level: %d tables of %d bytes on average, %d cuts", len(b), avg, cuts)
	if avg < uint64(o.TargetFileSize)/2 {
		t.Errorf("base tables average %d bytes, under half the target %d", avg, o.TargetFileSize)
	}
	if cuts == 0 {
		t.Errorf("the base level of %d bytes is not cut into slices", sumSize(b))
	}
	if (cuts+1)*2 > len(b) {
		t.Errorf("%d slices over %d base tables: fewer than two tables a slice", cuts+1, len(b))
	}
}
