package lsm

import (
	"context"
	"fmt"

	"github.com/seed84792017/cellcast/lsm/internal/manifest"
)

// Flush writes the memtable to L0 and waits until every memtable that held
// data when Flush was called is on disk.
func (d *DB) Flush() error {
	if err := d.commit(&writer{force: true, ready: make(chan struct{}, 1)}); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for len(d.imm) > 0 {
		if d.bgErr != nil {
			return fmt.Errorf("%w: %w", ErrWritesRefused, d.bgErr)
		}
		if d.closed {
			return ErrClosed
		}
		d.bgCond.Wait()
	}
	return nil
}

// Compact flushes, then compacts every level's files that overlap [start,
// end] (inclusive; nil bounds are open) down to the deepest level holding
// data and finally rewrites that level, so the range ends in one level with
// merged lists and everything the compaction filter rejects dropped. A file
// with nothing below it to merge with is moved, not rewritten; in the last
// level, the tables a rewrite would leave unchanged are skipped.
func (d *DB) Compact(ctx context.Context, start, end []byte) error {
	if err := d.Flush(); err != nil {
		return err
	}
	d.compactMu.Lock()
	defer d.compactMu.Unlock()
	d.mu.Lock()
	last := manifest.NumLevels - 1
	for last > 1 && d.vs.current.NumFiles(last) == 0 {
		last--
	}
	if d.vs.current.NumFiles(last) == 0 {
		last = manifest.NumLevels - 1 // only L0 holds data: it goes to the base level
	}
	d.mu.Unlock()
	for lvl := 0; lvl <= last; lvl++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		d.mu.Lock()
		if d.bgErr != nil {
			err := d.bgErr
			d.mu.Unlock()
			return fmt.Errorf("%w: %w", ErrWritesRefused, err)
		}
		v := d.vs.current
		v.Ref()
		d.mu.Unlock()
		for _, c := range d.manualCompactions(v, lvl, last, start, end) {
			v.Ref()
			if err := d.runCompaction(c); err != nil {
				d.deleteObsolete(v.Unref())
				d.mu.Lock()
				d.setBgErrLocked(fmt.Errorf("compaction: %w", err))
				d.mu.Unlock()
				return err
			}
		}
		d.deleteObsolete(v.Unref())
	}
	return nil
}

// manualCompactions plans Compact's step for one level of v: its files in
// [start, end] into the next level with data (or last), or, for the last
// level, one rewrite per run of adjacent tables that are not settled. The
// caller takes a reference on v for each job it runs.
func (d *DB) manualCompactions(v *manifest.Version, lvl, last int, start, end []byte) []*compaction {
	files := v.Overlapping(lvl, start, end)
	if len(files) == 0 {
		return nil
	}
	if lvl < last {
		out := lvl + 1
		for out < last && v.NumFiles(out) == 0 {
			out++
		}
		c := &compaction{level: lvl, out: out, version: v}
		c.inputs[0] = files
		d.setupCompaction(c)
		return []*compaction{c}
	}
	var jobs []*compaction
	var run []*manifest.FileMetadata
	cut := func() {
		if len(run) > 0 {
			c := &compaction{level: lvl, out: lvl, version: v}
			c.inputs[0] = run
			jobs = append(jobs, c)
			run = nil
		}
	}
	for _, f := range files {
		if d.settled(f) {
			cut()
			continue
		}
		run = append(run, f)
	}
	cut()
	return jobs
}

// settled reports whether rewriting a last-level table would write it
// unchanged: without a compaction filter, one Set per key leaves nothing
// to drop, merge or collapse.
func (d *DB) settled(f *manifest.FileMetadata) bool {
	if d.opts.CompactionFilter != nil {
		return false
	}
	r, release, err := d.tables.get(f)
	if err != nil {
		return false // the rewrite reports it
	}
	defer release()
	p := r.Properties()
	return p.NumDeletions == 0 && p.NumMerges == 0 && p.NumKeys == p.NumEntries
}
