package lsm

import (
	"bytes"
	"hash/fnv"
	"sort"

	"github.com/seed84792017/cellcast/lsm/internal/manifest"
)

// A flush is cut into key slices along the base level's tables, so that
// L0 drains a slice at a time, as Pebble's does: a compaction takes one
// slice's stack of L0 tables and the base tables below it, not every flush
// whole and the whole base level, and L0 stays smaller while writes go on.
//
// For the stacks to line up, every flush must cut at the same keys, and a
// compaction of one slice must not move the cuts of the others. So a cut
// falls after a base table chosen by its own largest key alone (a hash of
// it), never by its place or by the sizes before it: a compaction rewrites
// only the base tables of its slice, whose largest key stays the slice's
// end, and every other cut stays where it was.

// sliceSpan is how many base tables a slice spans on average, and how many
// tables' worth of base an L0 compaction takes at least: a power of two,
// at least 4, that makes about 6 to 12 slices of a base level of n tables.
// Each slice costs a flush a table and a sync; a few large slices would
// compact L0 in few, large jobs again. The span grows with the base level,
// and the cuts of a span are among those of half that span (see
// endsSlice), so tables cut along a smaller span still lie within one
// slice of a greater one.
func sliceSpan(n int) int {
	span := 4
	for span*2*6 <= n {
		span *= 2
	}
	return span
}

// sliceCuts returns the keys that end the slices of base, the base level's
// sorted tables: the largest keys of the tables that end one.
func sliceCuts(base []*manifest.FileMetadata) [][]byte {
	span := sliceSpan(len(base))
	var cuts [][]byte
	for i, f := range base {
		if i == len(base)-1 || endsSlice(f.Largest.UserKey, span) {
			cuts = append(cuts, f.Largest.UserKey)
		}
	}
	return cuts
}

// splitAtBase returns the shouldStop of a flush over base: true at the
// first key past a cut. nil when the base level is empty.
func splitAtBase(base []*manifest.FileMetadata) func(key []byte) bool {
	if len(base) == 0 {
		return nil
	}
	cuts := sliceCuts(base)
	i := 0 // the first cut >= the last key
	return func(key []byte) bool {
		crossed := false
		for i < len(cuts) && bytes.Compare(key, cuts[i]) > 0 {
			i, crossed = i+1, true
		}
		return crossed
	}
}

// endsSlice reports whether a base table whose largest key is k ends a
// slice of span tables, a power of two: FNV-1a (whose low bits follow the
// key's last byte too closely on their own) mixed by MurmurHash3's
// finalizer, with its low log2(span) bits zero.
func endsSlice(k []byte, span int) bool {
	h := fnv.New64a()
	h.Write(k)
	return mix64(h.Sum64())&uint64(span-1) == 0
}

func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	return x ^ x>>33
}

// l0Slice picks what an L0 compaction into base takes when L0 is due: the
// oldest table and every newer one within its slice whose older
// overlapping tables are all taken too: one slice's stack.
//
// A slice holding less than minBytes of the base level is joined with the
// slices after it (or before it, at the end) until it holds that much.
// Cuts come only from base tables' largest keys, and a compaction's last
// output table ends at its slice's cut, so cuts would otherwise only ever
// be added: slices would shrink to one table each, and each compaction's
// partly filled last table would leave the base level in ever smaller
// tables. A compaction over several slices writes tables by size across
// the cuts between them, which then go unless a table happens to end there.
//
// The pick never grows past those slices: tables cut along an older base
// level (flushed while its slices were compacted) may straddle today's
// cuts, and growing to every overlapping table would chain from slice to
// slice across the whole key range. A newer table left behind is safe; an
// older one left above a newer one moved down would not be.
func l0Slice(l0, base []*manifest.FileMetadata, minBytes uint64) []*manifest.FileMetadata {
	seed := l0[0]
	lo, hi := sliceAround(base, seed, minBytes)
	taken := map[*manifest.FileMetadata]bool{seed: true}
	out := []*manifest.FileMetadata{seed}
	for i, g := range l0[1:] {
		if (lo != nil && bytes.Compare(g.Smallest.UserKey, lo) <= 0) || (hi != nil && bytes.Compare(g.Largest.UserKey, hi) > 0) {
			continue
		}
		ok := true
		for _, h := range l0[:i+1] {
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
	return out
}

// sliceAround returns the slices (lo, hi] around f, joined until they hold
// minBytes of base; nil bounds are open.
func sliceAround(base []*manifest.FileMetadata, f *manifest.FileMetadata, minBytes uint64) (lo, hi []byte) {
	cuts := sliceCuts(base)
	// The slices are (cuts[a-1], cuts[b]], with cuts[-1] and cuts[len] open.
	a := sort.Search(len(cuts), func(i int) bool { return bytes.Compare(cuts[i], f.Smallest.UserKey) >= 0 })
	b := max(a, sort.Search(len(cuts), func(i int) bool { return bytes.Compare(cuts[i], f.Largest.UserKey) >= 0 }))
	bound := func(i int) []byte {
		if i < 0 || i >= len(cuts) {
			return nil
		}
		return cuts[i]
	}
	for {
		lo, hi = bound(a-1), bound(b)
		var size uint64
		for _, t := range base {
			if (lo == nil || bytes.Compare(t.Smallest.UserKey, lo) > 0) && (hi == nil || bytes.Compare(t.Largest.UserKey, hi) <= 0) {
				size += t.Size
			}
		}
		switch {
		case size >= minBytes:
			return lo, hi
		case b < len(cuts):
			b++
		case a > 0:
			a--
		default:
			return lo, hi
		}
	}
}
