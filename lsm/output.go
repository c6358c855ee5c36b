package lsm

import (
	"bufio"
	"fmt"
	"sync"

	"github.com/seed84792017/cellcast/lsm/internal/manifest"
	"github.com/seed84792017/cellcast/lsm/sstable"
	"github.com/seed84792017/cellcast/lsm/vfs"
)

// outputFile is a table being written by a flush or compaction. Writes go
// through a buffer so a table costs a few large writes, not one per block.
type outputFile struct {
	num  uint64
	path string
	f    vfs.File
	w    *bufio.Writer
}

func (d *DB) newOutputFile() (*outputFile, error) {
	num := d.vs.newFileNum()
	path := makeFilename(d.fs, d.dir, fileTypeTable, num)
	f, err := d.fs.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	return &outputFile{num: num, path: path, f: f, w: bufio.NewWriterSize(f, 256<<10)}, nil
}

// finish completes the table and writes it out; a tableSyncer then syncs
// and closes the file. On error the file is closed and removed.
func (o *outputFile) finish(fs vfs.FS, w *sstable.Writer) (*manifest.FileMetadata, error) {
	meta, err := w.Close()
	if err == nil {
		err = o.w.Flush()
	}
	if err != nil {
		o.f.Close()
		fs.Remove(o.path)
		return nil, fmt.Errorf("writing %s: %w", o.path, err)
	}
	return &manifest.FileMetadata{
		Num: o.num, Size: meta.Size, Smallest: meta.Smallest, Largest: meta.Largest,
		SmallestSeq: meta.Props.SmallestSeq, LargestSeq: meta.Props.LargestSeq,
	}, nil
}

// tableSyncer syncs and closes finished tables in the background, up to
// maxTableSyncs at once, while the next table is written. Syncs in flight
// together share the file system's journal commits: a flush cut into
// slices, or a compaction's run of tables, pays for about one sync rather
// than one after another per table.
type tableSyncer struct {
	wg  sync.WaitGroup
	sem chan struct{}
	mu  sync.Mutex
	err error
}

const maxTableSyncs = 8

func newTableSyncer() *tableSyncer {
	return &tableSyncer{sem: make(chan struct{}, maxTableSyncs)}
}

func (s *tableSyncer) start(o *outputFile) {
	s.sem <- struct{}{}
	s.wg.Add(1)
	go func() {
		defer func() { <-s.sem; s.wg.Done() }()
		err := o.f.Sync()
		if cerr := o.f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			s.mu.Lock()
			if s.err == nil {
				s.err = fmt.Errorf("writing %s: %w", o.path, err)
			}
			s.mu.Unlock()
		}
	}()
}

// wait returns once every table started is synced and closed, with the
// first error.
func (s *tableSyncer) wait() error {
	s.wg.Wait()
	return s.err
}

// logAndApply records edit in the MANIFEST and makes the resulting version
// current. Called with d.mu held; it releases d.mu for the I/O and returns
// with it held. The caller publishes a new read state. On error the caller
// must not delete the edit's new files (see below).
func (d *DB) logAndApply(edit *manifest.VersionEdit) error {
	d.mu.Unlock()
	d.manifestMu.Lock()
	defer d.manifestMu.Unlock()
	d.mu.Lock()
	nv, err := d.vs.current.Apply(edit)
	if err != nil {
		return err
	}
	edit.LastSeq = d.lastSeq
	edit.NextFileNum = d.vs.nextFileNum.Load()
	d.mu.Unlock()
	err = d.vs.write(edit)
	d.mu.Lock()
	if err != nil {
		// The edit may have reached the manifest even though the write
		// failed, so its new files must stay: the next Open deletes them
		// if nothing refers to them. Writes are refused from here on.
		nv.Unref()
		return fmt.Errorf("writing manifest: %w", err)
	}
	if edit.LogNum != 0 {
		d.vs.logNum = edit.LogNum
	}
	d.vs.lastSeq = edit.LastSeq
	old := d.vs.current
	d.vs.current = nv
	d.deleteObsolete(old.Unref())
	return nil
}
