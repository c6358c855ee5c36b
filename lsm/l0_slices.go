package lsm

import (
	"bytes"
	"sort"

	"github.com/seed84792017/cellcast/lsm/internal/manifest"
)

// A flush is cut into key slices of the base level, so that L0 drains a
// slice at a time, as Pebble's does: a compaction takes one slice's stack
// of L0 tables and the base tables below it, not every flush whole and the
// whole base level. A whole-range compaction holds the L0 it started with
// until it ends, while as much again arrives; with k slices L0 holds about
// 1/2+1/k of one compaction's worth of flushes instead of 3/2.
//
// For the stacks to line up, every flush must cut at the same keys. So the
// cuts are sticky: chosen once at base-level table boundaries to split
// the base level by size, kept while each slice stays within a factor of
// two of its share, and honoured by every compaction into the base level
// (its output tables end at the cuts), so they stay table boundaries.

// baseSlices is the cuts of one base level; immutable once built.
type baseSlices struct {
	level int
	cuts  [][]byte // ascending; a slice is (cuts[i-1], cuts[i]]
}

// sliceCount is how many slices a base level of size bytes is cut into:
// one per sliceBytes (a quarter of the base level's target), at most
// maxSlices. Each slice costs a flush a table and a sync, and L0's mean
// size gains little past the first few: cut into 7 to 9 tables a flush,
// writes ran about 10% slower.
func sliceCount(size, sliceBytes uint64) int {
	k := int((size + sliceBytes/2) / max(sliceBytes, 1))
	return min(max(k, 1), maxSlices)
}

const maxSlices = 4

// currentSlices returns the slices for v's base level: the ones in use
// while they still fit it, new ones otherwise.
func (d *DB) currentSlices(v *manifest.Version) *baseSlices {
	level := d.opts.levelTargets(v).base
	base := v.Levels[level]
	want := sliceCount(sumSize(base), uint64(d.opts.LBaseMaxBytes)/maxSlices)
	if s := d.slices.Load(); s != nil && s.fits(level, base, want) {
		return s
	}
	s := &baseSlices{level: level, cuts: balancedCuts(base, want)}
	d.slices.Store(s)
	return s
}

// fits reports whether s still serves base: same level, a slice count
// within one of want (so a level whose size hovers between two counts
// keeps its cuts), every cut a table boundary, every slice within a factor
// of two of its share of the level.
func (s *baseSlices) fits(level int, base []*manifest.FileMetadata, want int) bool {
	n := len(s.cuts) + 1
	if s.level != level || n < want-1 || n > want+1 {
		return false
	}
	if n == 1 {
		return true
	}
	share := sumSize(base) / uint64(n)
	var sizes [maxSlices]uint64
	j := 0
	for _, t := range base {
		for j < len(s.cuts) && bytes.Compare(t.Smallest.UserKey, s.cuts[j]) > 0 {
			j++
		}
		if j < len(s.cuts) && bytes.Compare(t.Largest.UserKey, s.cuts[j]) > 0 {
			return false // t straddles cut j
		}
		sizes[j] += t.Size
	}
	for _, size := range sizes[:n] {
		if size < share/2 || size > 2*share {
			return false
		}
	}
	return true
}

// balancedCuts cuts base after the tables where its running size first
// reaches each of want-1 equal shares.
func balancedCuts(base []*manifest.FileMetadata, want int) [][]byte {
	total := sumSize(base)
	var cuts [][]byte
	var run uint64
	for _, t := range base[:max(len(base)-1, 0)] {
		run += t.Size
		if len(cuts) < want-1 && run*uint64(want) >= total*uint64(len(cuts)+1) {
			cuts = append(cuts, t.Largest.UserKey)
		}
	}
	return cuts
}

// splitAt returns a shouldStop that is true at the first key past each
// cut; nil without cuts.
func splitAt(cuts [][]byte) func(key []byte) bool {
	if len(cuts) == 0 {
		return nil
	}
	i := 0 // the first cut >= the last key
	return func(key []byte) bool {
		crossed := false
		for i < len(cuts) && bytes.Compare(key, cuts[i]) > 0 {
			i, crossed = i+1, true
		}
		return crossed
	}
}

// l0Pick picks what an L0 compaction into base takes when L0 is due: of
// the slice stacks around each L0 table (l0Slice), the one that moves the
// most L0 bytes per byte of base it rewrites, so compaction spends its
// time where L0 is deepest. Ties go to the older seed.
func l0Pick(l0, base []*manifest.FileMetadata, cuts [][]byte) []*manifest.FileMetadata {
	var best []*manifest.FileMetadata
	bestRatio := -1.0
	seen := map[[2]int]bool{}
	for i, f := range l0 {
		a, b := sliceAround(cuts, f)
		if seen[[2]int{a, b}] {
			continue
		}
		seen[[2]int{a, b}] = true
		got := l0Slice(l0, i, bound(cuts, a-1), bound(cuts, b))
		if got == nil {
			continue
		}
		lo, hi := manifest.KeyRange(got)
		var below uint64
		for _, t := range base {
			if t.Overlaps(lo, hi) {
				below += t.Size
			}
		}
		if r := float64(sumSize(got)) / float64(below+1); r > bestRatio {
			best, bestRatio = got, r
		}
	}
	return best
}

// sliceAround returns the slices a..b that hold f: (cuts[a-1], cuts[b]].
func sliceAround(cuts [][]byte, f *manifest.FileMetadata) (a, b int) {
	a = sort.Search(len(cuts), func(i int) bool { return bytes.Compare(cuts[i], f.Smallest.UserKey) >= 0 })
	b = max(a, sort.Search(len(cuts), func(i int) bool { return bytes.Compare(cuts[i], f.Largest.UserKey) >= 0 }))
	return a, b
}

// bound is cuts[i], or nil (open) past either end.
func bound(cuts [][]byte, i int) []byte {
	if i < 0 || i >= len(cuts) {
		return nil
	}
	return cuts[i]
}

// l0Slice returns the stack of the slices (lo, hi] around l0[seed]: every
// table within them whose older overlapping tables are all taken too, or
// nil when that leaves the seed out (an older table straddling the bounds
// overlaps it). l0 is ordered oldest first.
//
// The pick never grows past those slices: tables flushed before the cuts
// moved may straddle today's, and growing to every overlapping table
// would chain from slice to slice across the whole key range. A newer
// table left behind is safe; an older one left above a newer one moved
// down would not be.
func l0Slice(l0 []*manifest.FileMetadata, seed int, lo, hi []byte) []*manifest.FileMetadata {
	taken := map[*manifest.FileMetadata]bool{}
	var out []*manifest.FileMetadata
	for i, g := range l0 {
		if (lo != nil && bytes.Compare(g.Smallest.UserKey, lo) <= 0) || (hi != nil && bytes.Compare(g.Largest.UserKey, hi) > 0) {
			continue
		}
		ok := true
		for _, h := range l0[:i] {
			if !taken[h] && h.Overlaps(g.Smallest.UserKey, g.Largest.UserKey) {
				ok = false
				break
			}
		}
		if ok {
			taken[g] = true
			out = append(out, g)
		}
	}
	if !taken[l0[seed]] {
		return nil
	}
	return out
}
