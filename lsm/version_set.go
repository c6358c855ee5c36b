package lsm

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/seed84792017/cellcast/lsm/internal/manifest"
	"github.com/seed84792017/cellcast/lsm/record"
	"github.com/seed84792017/cellcast/lsm/vfs"
)

// versionSet owns the current Version and the MANIFEST log that records how
// it came to be. Its fields change only with DB.manifestMu held (and DB.mu
// for the pointer swap of current); nextFileNum is atomic because the commit
// path takes WAL numbers without the manifest lock.
type versionSet struct {
	fs      vfs.FS
	dir     string
	opts    *Options
	current *manifest.Version

	logNum      uint64
	nextFileNum atomic.Uint64
	lastSeq     uint64 // as recorded in the manifest

	manifestNum  uint64
	manifestFile vfs.File
	manifest     *record.Writer
	// err is the first failed manifest write. The file may end in part of
	// a record; appending after it would turn a tolerated torn tail into
	// corruption in the middle, so every later write fails with it.
	err error
}

func (vs *versionSet) newFileNum() uint64 { return vs.nextFileNum.Add(1) - 1 }

// bumpFileNum makes sure numbers from now on are above n.
func (vs *versionSet) bumpFileNum(n uint64) {
	for {
		cur := vs.nextFileNum.Load()
		if cur > n || vs.nextFileNum.CompareAndSwap(cur, n+1) {
			return
		}
	}
}

// load replays the manifest CURRENT names.
func (vs *versionSet) load() error {
	curPath := makeFilename(vs.fs, vs.dir, fileTypeCurrent, 0)
	cur, err := readFile(vs.fs, curPath)
	if err != nil {
		return fmt.Errorf("lsm: reading %s: %w", curPath, err)
	}
	name := strings.TrimSpace(string(cur))
	typ, num, ok := parseFilename(name)
	if !ok || typ != fileTypeManifest {
		return &CorruptionError{File: vfs.Join(vs.dir, "CURRENT"), Reason: fmt.Sprintf("names %q, not a manifest", name)}
	}
	path := vfs.Join(vs.dir, name)
	v := &manifest.Version{}
	v.Ref()
	addedAt := map[uint64]int64{} // table number -> offset of the edit adding it
	end, err := readLog(vs.fs, path, func(rec []byte, off int64) error {
		var e manifest.VersionEdit
		if err := e.Decode(rec); err != nil {
			return &CorruptionError{File: path, Offset: off, Reason: err.Error()}
		}
		nv, err := v.Apply(&e)
		if err != nil {
			return &CorruptionError{File: path, Offset: off, Reason: err.Error()}
		}
		v.Unref()
		v = nv
		for _, f := range e.Added {
			addedAt[f.Meta.Num] = off
		}
		if e.LogNum != 0 {
			vs.logNum = e.LogNum
		}
		if e.NextFileNum != 0 {
			vs.bumpFileNum(e.NextFileNum - 1)
		}
		if e.LastSeq != 0 {
			vs.lastSeq = e.LastSeq
		}
		return nil
	})
	if err == nil {
		err = vs.checkLoaded(path, v, end, addedAt)
	}
	if err != nil {
		v.Unref()
		return err
	}
	vs.current = v
	vs.manifestNum = num
	vs.bumpFileNum(num)
	return nil
}

// checkLoaded refuses a manifest that cannot describe the DB: one without
// an intact first record (rotate syncs the state snapshot before CURRENT
// names the file), one naming a WAL or table that is gone. A torn tail is
// an edit a crash cut short and nothing acted on, but a tail lost to a
// flipped byte or a truncation may have been acted on; a flush edit's WAL
// and a compaction's inputs are deleted only after their edit is synced, so
// a dropped edit shows as a missing file here rather than as tables or
// writes silently gone.
func (vs *versionSet) checkLoaded(path string, v *manifest.Version, end logEnd, addedAt map[uint64]int64) error {
	if end.records == 0 {
		return &CorruptionError{File: path, Offset: end.valid, Reason: "no intact record: the state snapshot that starts every manifest is missing or damaged"}
	}
	if end.torn {
		vs.opts.Logger.Warn("lsm: MANIFEST ends in a torn record; using the intact prefix", "file", path, "offset", end.valid)
	}
	names, err := vs.fs.List(vs.dir)
	if err != nil {
		return fmt.Errorf("lsm: listing %s: %w", vs.dir, err)
	}
	present := map[string]bool{}
	for _, n := range names {
		present[n] = true
	}
	if vs.logNum != 0 {
		if wal := makeFilename(vs.fs, "", fileTypeLog, vs.logNum); !present[wal] {
			return &CorruptionError{File: path, Offset: end.valid, Reason: fmt.Sprintf("WAL %s, which the last edit names, is missing: an edit was lost or the WAL deleted", wal)}
		}
	}
	for _, files := range v.Levels {
		for _, f := range files {
			if t := makeFilename(vs.fs, "", fileTypeTable, f.Num); !present[t] {
				return &CorruptionError{File: path, Offset: addedAt[f.Num], Reason: fmt.Sprintf("table %s is missing", t)}
			}
		}
	}
	return nil
}

// snapshotEdit describes the whole current version as one edit.
func (vs *versionSet) snapshotEdit() *manifest.VersionEdit {
	e := &manifest.VersionEdit{LogNum: vs.logNum, NextFileNum: vs.nextFileNum.Load(), LastSeq: vs.lastSeq}
	for lvl, files := range vs.current.Levels {
		for _, f := range files {
			e.Added = append(e.Added, manifest.NewFile{Level: lvl, Meta: f})
		}
	}
	return e
}

// rotate starts a new MANIFEST holding the current state (plus edit, if
// any) and points CURRENT at it.
func (vs *versionSet) rotate(edit *manifest.VersionEdit) error {
	if vs.err != nil {
		return vs.err
	}
	num := vs.newFileNum()
	path := makeFilename(vs.fs, vs.dir, fileTypeManifest, num)
	f, err := vs.fs.Create(path)
	if err != nil {
		return err
	}
	w := record.NewWriter(f)
	snap := vs.snapshotEdit()
	err = w.Write(snap.Encode())
	if err == nil && edit != nil {
		err = w.Write(edit.Encode())
	}
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = setCurrent(vs.fs, vs.dir, num, vs.newFileNum())
	}
	if err != nil {
		f.Close()
		if vs.manifestFile != nil {
			// CURRENT may name either file now; neither may grow.
			vs.err = err
		}
		return err
	}
	if vs.manifestFile != nil {
		vs.manifestFile.Close()
	}
	vs.manifestNum, vs.manifestFile, vs.manifest = num, f, w
	return nil
}

// write appends an edit to the MANIFEST and syncs it.
func (vs *versionSet) write(edit *manifest.VersionEdit) error {
	if vs.err != nil {
		return vs.err
	}
	if vs.manifest.Size() > vs.opts.MaxManifestFileSize {
		return vs.rotate(edit)
	}
	err := vs.manifest.Write(edit.Encode())
	if err == nil {
		err = vs.manifest.Flush()
	}
	if err == nil {
		err = vs.manifestFile.Sync()
	}
	if err != nil {
		vs.err = err
	}
	return err
}

// setCurrent atomically points CURRENT at MANIFEST-num: write a temp file,
// sync it, rename it over CURRENT, sync the directory.
func setCurrent(fs vfs.FS, dir string, num, tmpNum uint64) error {
	tmp := makeFilename(fs, dir, fileTypeTemp, tmpNum)
	f, err := fs.Create(tmp)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "MANIFEST-%06d\n", num)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, makeFilename(fs, dir, fileTypeCurrent, 0))
	}
	if err == nil {
		err = syncDir(fs, dir)
	}
	return err
}

func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// logEnd describes how a log read by readLog ended.
type logEnd struct {
	records int
	// torn: the log ended in a torn (incomplete or unverifiable) record.
	torn bool
	// valid is the length of the intact prefix: where a torn record starts.
	valid int64
}

// readLog calls fn with each record of the log file at path and the
// offset where it starts, and reports how the log ended.
func readLog(fs vfs.FS, path string, fn func(rec []byte, off int64) error) (logEnd, error) {
	data, err := readFile(fs, path)
	if err != nil {
		return logEnd{}, fmt.Errorf("lsm: reading %s: %w", path, err)
	}
	r := record.NewReader(path, data)
	var end logEnd
	for {
		start := r.Offset()
		rec, err := r.Next()
		if err == io.EOF {
			end.torn, end.valid = r.Torn(), r.Offset()
			return end, nil
		}
		if err != nil {
			return end, err
		}
		end.records++
		if err := fn(rec, start); err != nil {
			return end, err
		}
	}
}

func readFile(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
