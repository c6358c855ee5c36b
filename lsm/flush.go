package lsm

import (
	"bytes"
	"fmt"
	"time"

	"github.com/seed84792017/cellcast/lsm/internal/manifest"
	"github.com/seed84792017/cellcast/lsm/internal/memtable"
	"github.com/seed84792017/cellcast/lsm/sstable"
)

// flushLoop writes immutable memtables to L0, oldest first.
func (d *DB) flushLoop() {
	defer d.bgWG.Done()
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		for !d.closed && (len(d.imm) == 0 || d.bgErr != nil) {
			d.flushCond.Wait()
		}
		if d.closed {
			return
		}
		if err := d.flushOldest(); err != nil {
			d.setBgErrLocked(fmt.Errorf("flush: %w", err))
		}
		d.bgCond.Broadcast()
		d.compactCond.Signal()
	}
}

// flushOldest is called with d.mu held and releases it for the I/O.
func (d *DB) flushOldest() error {
	m := d.imm[0]
	for {
		snaps, epoch := d.snapshots.seqs(), d.snapshotEpoch
		v := d.vs.current
		v.Ref()
		d.mu.Unlock()
		start := time.Now()
		metas, touched, err := d.writeL0Table(m.Memtable, v, snaps)
		d.deleteObsolete(v.Unref())
		if m.wal != nil {
			// The edit below lets its log be deleted: not while its
			// close (switchMemtable) may still write it.
			<-m.wal.closeDone
		}
		d.mu.Lock()
		if err != nil {
			return err
		}
		if touched && d.snapshotEpoch != epoch {
			// A snapshot appeared while the filter dropped entries it may
			// see; write the table again honouring it.
			d.removeOutputs(metas...)
			continue
		}
		edit := &manifest.VersionEdit{}
		for _, meta := range metas {
			edit.Added = append(edit.Added, manifest.NewFile{Level: 0, Meta: meta})
			d.m.flushBytes.Add(int64(meta.Size))
		}
		// Every WAL before the next memtable's is now redundant.
		next := d.mem.logNum
		if len(d.imm) > 1 {
			next = d.imm[1].logNum
		}
		edit.LogNum = next
		if err := d.logAndApply(edit); err != nil {
			return err
		}
		d.imm = d.imm[1:]
		d.updateReadStateLocked()
		d.m.flushes.Add(1)
		d.m.flushNanos.Add(int64(time.Since(start)))
		d.deleteObsoleteLogs(next)
		return nil
	}
}

func (d *DB) removeOutputs(metas ...*manifest.FileMetadata) {
	for _, m := range metas {
		if m != nil {
			d.fs.Remove(makeFilename(d.fs, d.dir, fileTypeTable, m.Num))
		}
	}
}

// deleteObsoleteLogs removes the WALs below a number; d.mu is held.
func (d *DB) deleteObsoleteLogs(below uint64) {
	if d.checkpoints > 0 {
		return
	}
	names, err := d.fs.List(d.dir)
	if err != nil {
		return
	}
	for _, n := range names {
		if t, num, ok := parseFilename(n); ok && t == fileTypeLog && num < below {
			if err := d.fs.Remove(makeFilename(d.fs, d.dir, fileTypeLog, num)); err != nil {
				d.opts.Logger.Warn("lsm: removing obsolete WAL", "file", n, "err", err)
			}
		}
	}
}

// writeL0 writes a memtable as L0 tables, for WAL replay (no snapshots).
func (d *DB) writeL0(m *memtable.Memtable, v *manifest.Version) ([]*manifest.FileMetadata, error) {
	metas, _, err := d.writeL0Table(m, v, nil)
	return metas, err
}

// writeL0Table writes a memtable as L0 tables, cut into the base level's
// slices (currentSlices). It returns no tables when the filter left
// nothing to write.
func (d *DB) writeL0Table(m *memtable.Memtable, v *manifest.Version, snaps []uint64) ([]*manifest.FileMetadata, bool, error) {
	ci := &compactionIter{
		in: memIter{m.NewIter()}, merger: d.opts.Merger, filter: d.opts.CompactionFilter, shadowed: d.opts.OnShadowed,
		level: 0, snapshots: snaps, isBase: baseLevelChecker(v, 0),
	}
	outs, err := d.writeTables(ci, 0, splitAt(d.currentSlices(v).cuts))
	if err != nil {
		return nil, false, err
	}
	return outs, ci.filterTouched, nil
}

// writeTables drains ci into new tables, starting a new one past
// targetSize (0: never) at a user-key boundary, or where shouldStop says
// so. shouldStop sees every user key, the first included.
func (d *DB) writeTables(ci *compactionIter, targetSize uint64, shouldStop func(key []byte) bool) ([]*manifest.FileMetadata, error) {
	var outs []*manifest.FileMetadata
	var w *sstable.Writer
	var cur *outputFile
	syncer := newTableSyncer()
	finish := func() error {
		if w == nil {
			return nil
		}
		meta, err := cur.finish(d.fs, w)
		if err == nil {
			syncer.start(cur)
			outs = append(outs, meta)
		}
		w, cur = nil, nil
		return err
	}
	fail := func(err error) ([]*manifest.FileMetadata, error) {
		if cur != nil {
			cur.f.Close()
			d.fs.Remove(cur.path)
		}
		syncer.wait()
		d.removeOutputs(outs...)
		return nil, err
	}
	var lastKey []byte
	for ok := ci.first(); ok; ok = ci.next() {
		k, v := ci.current()
		newKey := lastKey == nil || !bytes.Equal(k.UserKey, lastKey)
		stop := newKey && shouldStop != nil && shouldStop(k.UserKey)
		if w != nil && newKey && (stop || (targetSize > 0 && w.EstimatedSize() >= targetSize)) {
			if err := finish(); err != nil {
				return fail(err)
			}
		}
		if w == nil {
			var err error
			if cur, err = d.newOutputFile(); err != nil {
				return fail(err)
			}
			w = sstable.NewWriter(cur.w, d.opts.writerOptions())
		}
		if err := w.Add(k, v); err != nil {
			return fail(err)
		}
		if newKey {
			lastKey = append(lastKey[:0], k.UserKey...)
		}
	}
	if ci.err != nil {
		return fail(ci.err)
	}
	if err := finish(); err != nil {
		return fail(err)
	}
	if err := syncer.wait(); err != nil {
		return fail(err)
	}
	if len(outs) > 0 {
		if err := syncDir(d.fs, d.dir); err != nil {
			return fail(err)
		}
	}
	return outs, nil
}
