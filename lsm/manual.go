package lsm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

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
// level, the tables a rewrite would leave unchanged are skipped. Each step
// below L0 runs as CompactConcurrency compactions at once over disjoint
// key ranges.
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
		err := d.runJobs(v, d.manualCompactions(v, lvl, last, start, end))
		d.deleteObsolete(v.Unref())
		if err != nil {
			d.mu.Lock()
			d.setBgErrLocked(fmt.Errorf("compaction: %w", err))
			d.mu.Unlock()
			return err
		}
	}
	return nil
}

// runJobs runs one step's jobs, which touch disjoint files and key ranges,
// on up to CompactConcurrency goroutines; after a failure no further job
// starts. Each job takes its own reference on v.
func (d *DB) runJobs(v *manifest.Version, jobs []*compaction) error {
	var (
		next   atomic.Int64
		failed atomic.Bool
		wg     sync.WaitGroup
		errs   = make([]error, len(jobs))
	)
	for range min(d.opts.CompactConcurrency, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(len(jobs)) && !failed.Load(); i = next.Add(1) - 1 {
				v.Ref()
				if errs[i] = d.runCompaction(jobs[i]); errs[i] != nil {
					failed.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
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
		return d.splitCompaction(v, lvl, out, files)
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

// splitCompaction plans the move of files (sorted, from lvl) into out as
// jobs over disjoint key ranges that can run at once: a cut falls only
// between two files that share no table at out, and the jobs are of about
// a quarter of each goroutine's share, so the goroutines finish together.
// L0's files overlap one another and move as one job.
func (d *DB) splitCompaction(v *manifest.Version, lvl, out int, files []*manifest.FileMetadata) []*compaction {
	job := func(fs []*manifest.FileMetadata) *compaction {
		c := &compaction{level: lvl, out: out, version: v}
		c.inputs[0] = fs
		d.setupCompaction(c)
		return c
	}
	if lvl == 0 || d.opts.CompactConcurrency < 2 {
		return []*compaction{job(files)}
	}
	// Each file's bytes with those it overlaps below: what moving it costs.
	cost := make([]uint64, len(files))
	var total uint64
	for i, f := range files {
		cost[i] = f.Size + sumSize(v.Overlapping(out, f.Smallest.UserKey, f.Largest.UserKey))
		total += cost[i]
	}
	target := total / uint64(4*d.opts.CompactConcurrency)
	var jobs []*compaction
	first, size := 0, uint64(0)
	for i, f := range files {
		size += cost[i]
		if i+1 < len(files) && size >= target && !sharesBelow(v, out, f, files[i+1]) {
			jobs = append(jobs, job(files[first:i+1]))
			first, size = i+1, 0
		}
	}
	return append(jobs, job(files[first:]))
}

// sharesBelow reports whether a and b, adjacent files of one level with a
// before b, both overlap one table at out (or share a user key), so that
// they must be compacted by the same job.
func sharesBelow(v *manifest.Version, out int, a, b *manifest.FileMetadata) bool {
	if bytes.Equal(a.Largest.UserKey, b.Smallest.UserKey) {
		return true
	}
	for _, f := range v.Overlapping(out, a.Largest.UserKey, b.Smallest.UserKey) {
		if bytes.Compare(f.Smallest.UserKey, a.Largest.UserKey) <= 0 && bytes.Compare(f.Largest.UserKey, b.Smallest.UserKey) >= 0 {
			return true
		}
	}
	return false
}

// settled reports whether rewriting a last-level table would write it
// unchanged: without a compaction filter, one Set per key leaves nothing
// to drop, merge or collapse.
func (d *DB) settled(f *manifest.FileMetadata) bool {
	if d.opts.CompactionFilter != nil {
		return false
	}
	r, ref, err := d.tables.get(f)
	if err != nil {
		return false // the rewrite reports it
	}
	defer ref.release()
	p := r.Properties()
	return p.NumDeletions == 0 && p.NumMerges == 0 && p.NumKeys == p.NumEntries
}
