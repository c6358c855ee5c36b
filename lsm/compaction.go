package lsm

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/seed84792017/cellcast/lsm/internal/manifest"
)

// compaction is one job: inputs at level and at out, outputs at out. out is
// the next level with data below level (the base level for L0), or level
// itself when a manual compaction rewrites the last level to drop what the
// filter now rejects.
type compaction struct {
	level   int
	out     int
	inputs  [2][]*manifest.FileMetadata
	grand   []*manifest.FileMetadata // overlapping files at level+2
	version *manifest.Version
	cuts    [][]byte // the base level's slices, which an L0 compaction's outputs end at
}

func (c *compaction) outputLevel() int { return c.out }

func (c *compaction) bytesIn() uint64 {
	var n uint64
	for _, fs := range c.inputs {
		for _, f := range fs {
			n += f.Size
		}
	}
	return n
}

// compactLoop runs background compactions while any is due.
func (d *DB) compactLoop() {
	defer d.bgWG.Done()
	for {
		d.mu.Lock()
		for !d.closed && (d.bgErr != nil || !d.compactionDueLocked()) {
			d.compactCond.Wait()
		}
		closed := d.closed
		d.mu.Unlock()
		if closed {
			return
		}
		d.compactMu.Lock()
		d.mu.Lock()
		c := d.pickCompactionLocked()
		d.mu.Unlock()
		if c != nil {
			err := d.runCompaction(c)
			d.mu.Lock()
			if err != nil {
				d.setBgErrLocked(fmt.Errorf("compaction: %w", err))
			}
			d.bgCond.Broadcast()
			d.mu.Unlock()
		}
		d.compactMu.Unlock()
	}
}

// levelScores rates how overdue each level is. A level's fill is L0's
// depth in sublevels against L0CompactionThreshold, a deeper level's size
// against its target; a level is due at a fill of 1. Among due levels the
// one whose fill is highest against the fill of the level it compacts into
// goes first (as in Pebble): a full level below is drained before more is
// pushed into it, so a move from above does not merge with a level grown
// past its target. The last level is never a source.
func (d *DB) levelScores(v *manifest.Version) (best int, score float64, t levelTargets) {
	t = d.opts.levelTargets(v)
	var fill [manifest.NumLevels]float64
	fill[0] = float64(v.L0Depth()) / float64(d.opts.L0CompactionThreshold)
	if fill[0] < 1 && d.l0SeeksDue(v) {
		fill[0] = 1
	}
	for lvl := 1; lvl < manifest.NumLevels-1; lvl++ {
		fill[lvl] = float64(v.LevelSize(lvl)) / t.max[lvl]
	}
	fill[manifest.NumLevels-1] = 1
	best, score = -1, 0
	for lvl := 0; lvl < manifest.NumLevels-1; lvl++ {
		if fill[lvl] < 1 {
			continue
		}
		next := lvl + 1
		if lvl == 0 {
			next = t.base
		}
		if s := fill[lvl] / max(0.01, fill[next]); s > score {
			best, score = lvl, s
		}
	}
	return best, score, t
}

func (d *DB) compactionDueLocked() bool {
	best, _, _ := d.levelScores(d.vs.current)
	return best >= 0
}

// pickCompactionLocked chooses the most overdue level and a file in it: for
// L0 the slice stack that moves the most per byte of base it rewrites
// (l0Pick), into the base level; deeper, the file that rewrites the fewest
// bytes below per byte it moves (minOverlap), into the level below. L0
// goes whole when it is compacted for its seeks, below the threshold: the
// seeks read every sublevel wherever they land.
func (d *DB) pickCompactionLocked() *compaction {
	v := d.vs.current
	level, _, t := d.levelScores(v)
	if level < 0 {
		return nil
	}
	c := &compaction{level: level, out: level + 1, version: v}
	files := v.Levels[level]
	if level == 0 {
		c.out = t.base
		c.cuts = d.currentSlices(v).cuts
		if v.L0Depth() < d.opts.L0CompactionThreshold {
			c.inputs[0] = files
		} else {
			c.inputs[0] = l0Pick(files, v.Levels[t.base], c.cuts)
		}
	} else {
		c.inputs[0] = []*manifest.FileMetadata{minOverlap(v, level, files)}
	}
	d.setupCompaction(c)
	v.Ref()
	return c
}

// minOverlap picks the file of level whose move rewrites the fewest bytes
// of the level below per byte of its own, as RocksDB and Pebble do by
// default: against a round robin through the keys it lowers the write
// amplification, so compaction keeps up and fewer old versions wait in the
// upper levels. Ties go to the first file.
func minOverlap(v *manifest.Version, level int, files []*manifest.FileMetadata) *manifest.FileMetadata {
	best, bestRatio := files[0], math.Inf(1)
	for _, f := range files {
		below := sumSize(v.Overlapping(level+1, f.Smallest.UserKey, f.Largest.UserKey))
		if r := float64(below) / float64(max(f.Size, 1)); r < bestRatio {
			best, bestRatio = f, r
		}
	}
	return best
}

// setupCompaction adds the overlapping files of the output level and the
// grandparents that bound output file overlap.
func (d *DB) setupCompaction(c *compaction) {
	lo, hi := manifest.KeyRange(c.inputs[0])
	if c.out != c.level {
		c.inputs[1] = c.version.Overlapping(c.out, lo, hi)
	}
	if c.out+1 < manifest.NumLevels {
		lo, hi = manifest.KeyRange(c.inputs[0], c.inputs[1])
		c.grand = c.version.Overlapping(c.out+1, lo, hi)
	}
}

// runCompaction executes c and installs the result. compactMu is held.
func (d *DB) runCompaction(c *compaction) error {
	defer func() { d.deleteObsolete(c.version.Unref()) }()
	start := time.Now()
	if c.out != c.level && len(c.inputs[0]) == 1 && len(c.inputs[1]) == 0 && sumSize(c.grand) <= d.opts.maxGrandOverlap() {
		// Trivial move: nothing to merge with, just relink the file.
		f := c.inputs[0][0]
		edit := &manifest.VersionEdit{
			Deleted: []manifest.DeletedFile{{Level: c.level, Num: f.Num}},
			Added:   []manifest.NewFile{{Level: c.out, Meta: f}},
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		if err := d.logAndApply(edit); err != nil {
			return err
		}
		if c.level == 0 {
			d.resetL0Seeks()
		}
		d.updateReadStateLocked()
		d.m.moves.Add(1)
		return nil
	}
	ranges := []keyRange{{}}
	if d.backlogged(c) {
		ranges = d.subRanges(c)
	}
	for {
		d.mu.Lock()
		snaps, epoch := d.snapshots.seqs(), d.snapshotEpoch
		d.mu.Unlock()

		var outs []*manifest.FileMetadata
		var errs []error
		touched, dropped := false, int64(0)
		for _, r := range d.compactRanges(c, ranges, snaps) {
			outs = append(outs, r.outs...)
			errs = append(errs, r.err)
			touched = touched || r.filterTouched
			dropped += r.dropped
		}
		if err := errors.Join(errs...); err != nil {
			d.removeOutputs(outs...) // the ranges that succeeded
			return err
		}
		d.mu.Lock()
		if touched && d.snapshotEpoch != epoch {
			d.mu.Unlock()
			d.removeOutputs(outs...)
			continue
		}
		edit := &manifest.VersionEdit{}
		for _, f := range c.inputs[0] {
			edit.Deleted = append(edit.Deleted, manifest.DeletedFile{Level: c.level, Num: f.Num})
		}
		for _, f := range c.inputs[1] {
			edit.Deleted = append(edit.Deleted, manifest.DeletedFile{Level: c.out, Num: f.Num})
		}
		var written uint64
		for _, m := range outs {
			edit.Added = append(edit.Added, manifest.NewFile{Level: c.out, Meta: m})
			written += m.Size
		}
		if err := d.logAndApply(edit); err != nil {
			d.mu.Unlock()
			return err
		}
		if c.level == 0 {
			d.resetL0Seeks()
		}
		d.updateReadStateLocked()
		d.mu.Unlock()
		d.m.compactions.Add(1)
		d.m.compactNanos.Add(int64(time.Since(start)))
		d.m.compactBytesIn.Add(int64(c.bytesIn()))
		d.m.compactBytesOut.Add(int64(written))
		d.m.levelBytesIn[c.out].Add(int64(written))
		d.m.droppedByCompaction.Add(dropped)
		return nil
	}
}

// compactRange merges c's inputs within r into new tables at c's output
// level. Its outputs are removed again when it fails.
func (d *DB) compactRange(c *compaction, r keyRange, snaps []uint64) rangeResult {
	iters := make([]internalIterator, 0, len(c.inputs[0])+1)
	if c.level == 0 {
		for _, run := range manifest.Sublevels(c.inputs[0]) {
			iters = append(iters, &levelIter{d: d, files: run, compaction: true})
		}
	} else {
		iters = append(iters, &levelIter{d: d, files: c.inputs[0], compaction: true})
	}
	iters = append(iters, &levelIter{d: d, files: r.within(c.inputs[1]), compaction: true})
	var in internalIterator = newMergingIter(iters)
	if r.lo != nil || r.hi != nil {
		in = &boundedIter{in, r}
	}
	defer in.Close()
	out := c.outputLevel()
	ci := &compactionIter{
		in: in, merger: d.opts.Merger, filter: d.opts.CompactionFilter, shadowed: d.opts.OnShadowed, level: out, snapshots: snaps,
		isBase: baseLevelChecker(c.version, out+1), zeroSeqs: !d.opts.KeepSeqNums,
	}
	maxGrand := d.opts.maxGrandOverlap()
	grand := c.grand
	var grandOverlap uint64
	var seenKey bool
	atCut := splitAt(c.cuts)
	shouldStop := func(key []byte) bool {
		stop := atCut != nil && atCut(key)
		for len(grand) > 0 && bytes.Compare(key, grand[0].Largest.UserKey) > 0 {
			if seenKey {
				grandOverlap += grand[0].Size
			}
			grand = grand[1:]
		}
		seenKey = true
		if stop || grandOverlap > maxGrand {
			grandOverlap = 0
			return true
		}
		return false
	}
	outs, err := d.writeTables(ci, uint64(d.opts.TargetFileSize), shouldStop)
	return rangeResult{outs: outs, filterTouched: ci.filterTouched, dropped: ci.dropped, err: err}
}

// maxGrandOverlap is how much of the level below its output a compaction
// output table may overlap: a trivial move is refused past it, and an
// output table is cut there.
func (o *Options) maxGrandOverlap() uint64 { return uint64(10 * o.TargetFileSize) }

func sumSize(files []*manifest.FileMetadata) uint64 {
	var n uint64
	for _, f := range files {
		n += f.Size
	}
	return n
}

// baseLevelChecker answers, for increasing keys, whether no file at level
// from or deeper holds the key. It advances one pointer per sorted run: each
// L0 sublevel and each deeper level.
func baseLevelChecker(v *manifest.Version, from int) func([]byte) bool {
	var runs [][]*manifest.FileMetadata
	if from == 0 {
		runs = append(runs, v.L0Sublevels...)
	}
	for lvl := max(from, 1); lvl < manifest.NumLevels; lvl++ {
		runs = append(runs, v.Levels[lvl])
	}
	ptrs := make([]int, len(runs))
	return func(key []byte) bool {
		for r, files := range runs {
			for ptrs[r] < len(files) {
				f := files[ptrs[r]]
				if bytes.Compare(key, f.Largest.UserKey) <= 0 {
					if bytes.Compare(key, f.Smallest.UserKey) >= 0 {
						return false
					}
					break
				}
				ptrs[r]++
			}
		}
		return true
	}
}
