package lsm

import (
	"errors"
	"fmt"
	"io"

	"github.com/seed84792017/cellcast/lsm/internal/manifest"
	"github.com/seed84792017/cellcast/lsm/record"
	"github.com/seed84792017/cellcast/lsm/vfs"
)

// ErrCheckpointExists is returned by Checkpoint when its directory exists.
var ErrCheckpointExists = errors.New("lsm: checkpoint directory already exists")

// Checkpoint writes a consistent copy of the open database to dir, which
// must not exist, while writes go on: Open(dir) finds every write that was
// acknowledged before Checkpoint was called (and perhaps some later ones).
// Tables are immutable, so they are hard-linked (copied where links fail,
// as across file systems); the WALs the current version still needs are
// copied, the one being written up to what it held at the start; a new
// MANIFEST describes the version of that moment.
func (d *DB) Checkpoint(dir string) (err error) {
	if _, err := d.fs.List(dir); err == nil || d.fs.Exists(dir) {
		return fmt.Errorf("%w: %s", ErrCheckpointExists, dir)
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return ErrClosed
	}
	// The version pins its tables; the WALs of the memtables not yet in it
	// stay because flushes delete no WAL while a checkpoint runs.
	v := d.vs.current
	v.Ref()
	snap := &manifest.VersionEdit{LogNum: d.vs.logNum, LastSeq: d.vs.lastSeq}
	for lvl, files := range v.Levels {
		for _, f := range files {
			snap.Added = append(snap.Added, manifest.NewFile{Level: lvl, Meta: f})
		}
	}
	var wals []uint64
	for _, m := range d.imm {
		wals = append(wals, m.logNum)
	}
	wals = append(wals, d.mem.logNum)
	live := d.log
	manifestNum := d.vs.newFileNum()
	tmpNum := d.vs.newFileNum()
	snap.NextFileNum = d.vs.nextFileNum.Load()
	d.checkpoints++
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.checkpoints--
		d.mu.Unlock()
		d.deleteObsolete(v.Unref())
		if err != nil {
			removeAll(d.fs, dir)
		}
	}()

	// Everything appended to the live WAL so far reaches its file, so a
	// prefix of the file holds every write acknowledged before now.
	if err := live.flush(false); err != nil {
		return fmt.Errorf("lsm: checkpoint: flushing the WAL: %w", err)
	}
	liveEnd := live.written.Load()

	if err := d.fs.MkdirAll(dir); err != nil {
		return fmt.Errorf("lsm: checkpoint: %w", err)
	}
	for _, f := range snap.Added {
		name := makeFilename(d.fs, "", fileTypeTable, f.Meta.Num)
		if err := linkOrCopy(d.fs, vfs.Join(d.dir, name), vfs.Join(dir, name)); err != nil {
			return fmt.Errorf("lsm: checkpoint: %w", err)
		}
	}
	for _, num := range wals {
		if num < snap.LogNum {
			continue // already in the version's tables
		}
		limit := int64(-1)
		if num == live.num {
			limit = liveEnd
		}
		name := makeFilename(d.fs, "", fileTypeLog, num)
		if err := copyFile(d.fs, vfs.Join(d.dir, name), vfs.Join(dir, name), limit); err != nil {
			return fmt.Errorf("lsm: checkpoint: %w", err)
		}
	}
	opts := makeFilename(d.fs, "", fileTypeOptions, 0)
	if err := copyFile(d.fs, vfs.Join(d.dir, opts), vfs.Join(dir, opts), -1); err != nil {
		return fmt.Errorf("lsm: checkpoint: %w", err)
	}
	if err := writeManifest(d.fs, dir, manifestNum, snap); err != nil {
		return fmt.Errorf("lsm: checkpoint: %w", err)
	}
	if err := setCurrent(d.fs, dir, manifestNum, tmpNum); err != nil {
		return fmt.Errorf("lsm: checkpoint: %w", err)
	}
	return nil
}

// writeManifest writes MANIFEST-num holding one edit, synced.
func writeManifest(fs vfs.FS, dir string, num uint64, snap *manifest.VersionEdit) error {
	f, err := fs.Create(makeFilename(fs, dir, fileTypeManifest, num))
	if err != nil {
		return err
	}
	w := record.NewWriter(f)
	err = w.Write(snap.Encode())
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// linkOrCopy hard-links src to dst, or copies it where the link fails.
func linkOrCopy(fs vfs.FS, src, dst string) error {
	if err := fs.Link(src, dst); err == nil {
		return nil
	}
	return copyFile(fs, src, dst, -1)
}

// copyFile copies src to dst, only its first limit bytes unless limit is
// negative, and syncs dst.
func copyFile(fs vfs.FS, src, dst string, limit int64) error {
	in, err := fs.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := fs.Create(dst)
	if err != nil {
		return err
	}
	var r io.Reader = in
	if limit >= 0 {
		r = io.LimitReader(in, limit)
	}
	n, err := io.Copy(out, r)
	if err == nil && limit >= 0 && n < limit {
		err = fmt.Errorf("%s holds %d bytes, fewer than the %d written to it", src, n, limit)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// removeAll removes a failed checkpoint's files and directory.
func removeAll(fs vfs.FS, dir string) {
	names, err := fs.List(dir)
	if err != nil {
		return
	}
	for _, n := range names {
		fs.Remove(vfs.Join(dir, n))
	}
	fs.Remove(dir)
}
