package lsm

import (
	"bytes"
	"sync"

	"github.com/seed84792017/cellcast/lsm/internal/manifest"
)

// A compaction of L0 into the base level reads L0 tables that overlap one
// another, so unlike a deeper level's it cannot be cut into compactions of
// disjoint files. It is cut by key instead, as RocksDB's
// subcompactions are: at boundaries of the base level's tables, into up to
// CompactConcurrency ranges that run at once, each reading only its range
// of every input. All ranges install as one edit, so L0 drains in the
// time of the largest range rather than of the whole.

// keyRange is [lo, hi) in user keys; nil bounds are open.
type keyRange struct{ lo, hi []byte }

// minSubFiles is how many base-level tables each range gets at least: a
// range writes one partly filled table at its end, so very small ranges
// would leave many small files.
const minSubFiles = 2

// backlogged reports whether c drains an L0 of at least twice its
// compaction threshold: only then is it cut into ranges. Draining L0
// faster than that means more, smaller L0 compactions, each rewriting its
// whole overlap in the base level: at 1M keys, where the base level is the
// last, cutting every L0 compaction raised write amplification from 3.0
// to 3.5 for no gain in throughput. A backlog is what slows writes down.
func (d *DB) backlogged(c *compaction) bool {
	return c.level == 0 && len(manifest.Sublevels(c.inputs[0])) >= 2*d.opts.L0CompactionThreshold
}

// subRanges cuts c's keys for its subcompactions: a single open range
// unless c moves L0 into a level below with enough tables to cut by.
func (d *DB) subRanges(c *compaction) []keyRange {
	below := c.inputs[1]
	k := min(d.opts.CompactConcurrency, len(below)/minSubFiles)
	if c.level != 0 || c.out == c.level || k < 2 {
		return []keyRange{{}}
	}
	total := sumSize(below)
	var out []keyRange
	var lo []byte
	var acc uint64
	for i, f := range below[:len(below)-1] {
		acc += f.Size
		next := below[i+1].Smallest.UserKey
		// Cut where the running size crosses the next k-th share.
		if acc*uint64(k) >= total*uint64(len(out)+1) && !bytes.Equal(f.Largest.UserKey, next) {
			out = append(out, keyRange{lo, next})
			lo = next
		}
	}
	return append(out, keyRange{lo, nil})
}

// within returns the files of a sorted level that lie in r: ranges are cut
// at file boundaries, so each file lies in exactly one.
func (r keyRange) within(files []*manifest.FileMetadata) []*manifest.FileMetadata {
	i, j := 0, len(files)
	for i < j && r.lo != nil && bytes.Compare(files[i].Smallest.UserKey, r.lo) < 0 {
		i++
	}
	for j > i && r.hi != nil && bytes.Compare(files[j-1].Smallest.UserKey, r.hi) >= 0 {
		j--
	}
	return files[i:j]
}

// boundedIter reads its child only within r.
type boundedIter struct {
	internalIterator
	r keyRange
}

func (b *boundedIter) First() {
	if b.r.lo == nil {
		b.internalIterator.First()
		return
	}
	b.internalIterator.SeekGE(b.r.lo)
}

func (b *boundedIter) Valid() bool {
	return b.internalIterator.Valid() && (b.r.hi == nil || bytes.Compare(b.internalIterator.Key().UserKey, b.r.hi) < 0)
}

// rangeResult is what one range of a compaction wrote.
type rangeResult struct {
	outs          []*manifest.FileMetadata
	filterTouched bool
	dropped       int64
	err           error
}

// compactRanges runs c's ranges at once, each as compactRange, and
// returns their results in key order.
func (d *DB) compactRanges(c *compaction, ranges []keyRange, snaps []uint64) []rangeResult {
	res := make([]rangeResult, len(ranges))
	if len(ranges) == 1 {
		res[0] = d.compactRange(c, ranges[0], snaps)
		return res
	}
	var wg sync.WaitGroup
	for i, r := range ranges {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = d.compactRange(c, r, snaps)
		}()
	}
	wg.Wait()
	d.m.subcompactions.Add(int64(len(ranges) - 1))
	return res
}
