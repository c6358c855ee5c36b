package lsm

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/seed84792017/cellcast/lsm/internal/manifest"
	"github.com/seed84792017/cellcast/lsm/internal/memtable"
	"github.com/seed84792017/cellcast/lsm/sstable"
	"github.com/seed84792017/cellcast/lsm/vfs"
)

// memTable is a memtable with the number of the WAL that holds its entries.
type memTable struct {
	*memtable.Memtable
	logNum uint64
	// wal is that log while it is open or closing; nil for a memtable
	// rebuilt from a log at open.
	wal *walWriter
	// firstSeq is the first sequence number the memtable may hold: every
	// earlier write is in an older memtable or a table.
	firstSeq uint64
}

// newMemTable makes a memtable of the configured size, or larger when one
// write group needs more.
func (d *DB) newMemTable(logNum uint64, need int) *memTable {
	return &memTable{Memtable: memtable.New(max(int(d.opts.MemTableSize), need)), logNum: logNum, firstSeq: d.lastSeq + 1}
}

// readState is what a reader needs, pinned together: the memtables (newest
// first) and the version. Reads take a reference; the last release lets the
// version's obsolete files go.
type readState struct {
	d       *DB
	mems    []*memTable
	version *manifest.Version
	refs    atomic.Int32
	// l0SeekBudget: see seek_compaction.go.
	l0SeekBudget int64
}

// flushedSeq is the first sequence number not yet in rs's tables: every
// write numbered below it is in the version (or dropped as shadowed).
func (rs *readState) flushedSeq() uint64 { return rs.mems[len(rs.mems)-1].firstSeq }

// FlushedSeq is the first sequence number not yet in a table: every write
// numbered below it is (see Batch.SeqNum, IterOptions.SkipMemtables).
func (d *DB) FlushedSeq() (uint64, error) {
	rs := d.loadReadState()
	if rs == nil {
		return 0, ErrClosed
	}
	defer rs.unref()
	return rs.flushedSeq(), nil
}

func (rs *readState) unref() {
	if rs.refs.Add(-1) == 0 {
		rs.d.deleteObsolete(rs.version.Unref())
	}
}

// DB is an open database. All methods are safe for concurrent use.
type DB struct {
	dir     string
	opts    *Options
	fs      vfs.FS
	lock    io.Closer
	cache   *sstable.Cache
	cacheID uint64
	tables  *tableCache
	stats   sstable.ReadStats
	m       metricsCounters

	// visibleSeq is the sequence number new reads see: every write at or
	// below it is fully applied to the memtable.
	visibleSeq atomic.Uint64
	// shut is set when Close begins; from then on no file is deleted, so a
	// reader released after Close cannot delete the tables of the final
	// version (the next Open removes whatever nothing refers to).
	shut atomic.Bool

	rsMu      sync.RWMutex
	readState *readState

	// l0Seeks counts L0 sublevels positioned by iterator seeks since L0 was
	// last compacted; l0SeekWake is set once they woke the compactor.
	l0Seeks    atomic.Int64
	slices     atomic.Pointer[baseSlices] // the base level's cuts (currentSlices)
	l0SeekWake atomic.Bool

	compactMu  sync.Mutex // held while a compaction runs
	manifestMu sync.Mutex // held while the manifest is written
	// walSyncing is set by the first commit that waits for a WAL sync:
	// the WALs are preallocated from then on (walWriter.prealloc).
	walSyncing atomic.Bool
	mu         sync.Mutex
	// Under mu:
	vs            *versionSet
	mem           *memTable
	imm           []*memTable // oldest first
	log           *walWriter
	lastSeq       uint64 // last sequence number assigned
	writers       []*writer
	bgErr         error
	closed        bool
	bgCond        sync.Cond // signalled when a flush or compaction finishes
	flushCond     sync.Cond // signalled when a memtable waits for a flush
	compactCond   sync.Cond // signalled when compaction may be due
	snapshots     snapshotList
	snapshotEpoch uint64
	// checkpoints counts Checkpoint calls under way; while any is, no WAL
	// is deleted (the next flush after them deletes the obsolete ones).
	checkpoints int
	// nextWAL is the log file the next memtable switch takes (walnext.go).
	nextWAL *preparedWAL
	bgWG    sync.WaitGroup
}

// Open opens or creates the database in dir.
func Open(dir string, opts *Options) (*DB, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	d := &DB{dir: dir, opts: o, fs: o.FS}
	d.bgCond.L, d.flushCond.L, d.compactCond.L = &d.mu, &d.mu, &d.mu
	d.snapshots.init()
	if err := d.fs.MkdirAll(dir); err != nil {
		return nil, fmt.Errorf("lsm: creating %s: %w", dir, err)
	}
	lock, err := d.fs.Lock(makeFilename(d.fs, dir, fileTypeLock, 0))
	if err != nil {
		if errors.Is(err, vfs.ErrLocked) {
			return nil, fmt.Errorf("lsm: %s is in use by another process or DB: %w", dir, err)
		}
		return nil, err
	}
	d.lock = lock
	d.cache = o.Cache
	if d.cache == nil {
		d.cache = sstable.NewCache(o.BlockCacheSize)
	}
	d.cacheID = d.cache.NewID()
	d.tables = newTableCache(d, o.MaxOpenFiles)
	if err := d.recover(); err != nil {
		d.tables.closeAll()
		lock.Close()
		return nil, err
	}
	d.bgWG.Add(2)
	go d.flushLoop()
	go d.compactLoop()
	d.mu.Lock()
	d.compactCond.Signal()
	d.mu.Unlock()
	return d, nil
}

// checkOptionsFile records the merger on creation and refuses a different
// one later: merged lists written by one merger mean nothing to another.
func (d *DB) checkOptionsFile(create bool) error {
	path := makeFilename(d.fs, d.dir, fileTypeOptions, 0)
	want := "merger=" + d.opts.Merger.Name + "\n"
	if !create && d.fs.Exists(path) {
		got, err := readFile(d.fs, path)
		if err != nil {
			return err
		}
		if string(got) != want {
			return fmt.Errorf("%w: stored %q, given %q", ErrMergerMismatch, strings.TrimSpace(string(got)), strings.TrimSpace(want))
		}
		return nil
	}
	f, err := d.fs.Create(path)
	if err != nil {
		return err
	}
	_, err = io.WriteString(f, want)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// recover loads the manifest, replays WALs into L0 tables, starts a fresh
// MANIFEST and WAL, and deletes files nothing refers to.
func (d *DB) recover() error {
	vs := &versionSet{fs: d.fs, dir: d.dir, opts: d.opts}
	d.vs = vs
	exists := d.fs.Exists(makeFilename(d.fs, d.dir, fileTypeCurrent, 0))
	if err := d.checkOptionsFile(!exists); err != nil {
		return err
	}
	if exists {
		if err := vs.load(); err != nil {
			return err
		}
	} else {
		vs.current = &manifest.Version{}
		vs.current.Ref()
		vs.bumpFileNum(0)
	}
	names, err := d.fs.List(d.dir)
	if err != nil {
		return err
	}
	var logs []uint64
	for _, n := range names {
		if t, num, ok := parseFilename(n); ok && t == fileTypeLog && num >= vs.logNum {
			logs = append(logs, num)
		}
		if _, num, ok := parseFilename(n); ok {
			vs.bumpFileNum(num)
		}
	}
	sort.Slice(logs, func(i, j int) bool { return logs[i] < logs[j] })
	d.lastSeq = vs.lastSeq
	// A torn tail is where a crash cut the log being written, so only the
	// last log that holds records may have one. A log is synced and
	// closed before the next one's first record reaches its file
	// (switchMemtable); a torn log followed by one with records lost data
	// that had been synced.
	var tornErr error
	for _, num := range logs {
		end, err := d.replayWAL(num)
		if err != nil {
			return err
		}
		if tornErr != nil && end.records > 0 {
			return tornErr
		}
		if end.torn {
			path := makeFilename(d.fs, d.dir, fileTypeLog, num)
			tornErr = &CorruptionError{File: path, Offset: end.valid, Reason: "torn record in a WAL followed by a newer WAL with records"}
			d.opts.Logger.Warn("lsm: WAL ends in a torn record; replayed the intact prefix", "file", path, "offset", end.valid)
		}
	}
	// Start the new WAL, then record everything in a fresh MANIFEST.
	logNum := vs.newFileNum()
	w, err := d.createWAL(logNum)
	if err != nil {
		return err
	}
	d.log = w
	d.mem = d.newMemTable(logNum, 0)
	d.mem.wal = w
	vs.logNum = logNum
	vs.lastSeq = d.lastSeq
	if err := vs.rotate(nil); err != nil {
		return fmt.Errorf("lsm: writing manifest: %w", err)
	}
	d.visibleSeq.Store(d.lastSeq)
	d.updateReadStateLocked()
	d.deleteUnreferencedFiles()
	return nil
}

// replayWAL applies one WAL's batches and reports how the log ended, writing L0 tables whenever the
// replay memtable fills. Each table joins the in-memory current version at
// once — later replays must see it below them — and the fresh MANIFEST that
// recover writes afterwards records them all.
func (d *DB) replayWAL(num uint64) (logEnd, error) {
	path := makeFilename(d.fs, d.dir, fileTypeLog, num)
	mem := memtable.New(int(d.opts.MemTableSize))
	flush := func() error {
		if mem.Empty() {
			return nil
		}
		metas, err := d.writeL0(mem, d.vs.current)
		if err != nil {
			return err
		}
		if len(metas) > 0 {
			e := &manifest.VersionEdit{}
			for _, meta := range metas {
				e.Added = append(e.Added, manifest.NewFile{Level: 0, Meta: meta})
			}
			nv, err := d.vs.current.Apply(e)
			if err != nil {
				return err
			}
			d.vs.current.Unref()
			d.vs.current = nv
		}
		mem = memtable.New(int(d.opts.MemTableSize))
		return nil
	}
	end, err := readLog(d.fs, path, func(rec []byte, off int64) error {
		br, err := newBatchReader(rec)
		if err != nil {
			return &CorruptionError{File: path, Offset: off, Reason: err.Error()}
		}
		seq := br.seq
		for {
			kind, key, value, ok, err := br.next()
			if err != nil {
				return &CorruptionError{File: path, Offset: off, Reason: err.Error()}
			}
			if !ok {
				break
			}
			if d.opts.FilterPrefixes != nil {
				d.opts.FilterPrefixes(key, mem.AddFilterKey)
			}
			if err := mem.Add(seq, kind, key, value); err == memtable.ErrFull {
				if err := flush(); err != nil {
					return err
				}
				if need := memtable.EntrySize(len(key), len(value)); need > mem.Free() {
					mem = memtable.New(need)
				}
				if d.opts.FilterPrefixes != nil {
					d.opts.FilterPrefixes(key, mem.AddFilterKey)
				}
				if err := mem.Add(seq, kind, key, value); err != nil {
					return err
				}
			} else if err != nil {
				return err
			}
			seq++
		}
		if seq-br.seq != uint64(br.count) {
			return &CorruptionError{File: path, Offset: off, Reason: "batch count mismatch"}
		}
		d.lastSeq = max(d.lastSeq, seq-1)
		if mem.Size() >= d.opts.MemTableSize {
			if err := flush(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return end, err
	}
	return end, flush()
}

// deleteUnreferencedFiles removes tables, WALs, manifests and temp files
// left behind by earlier runs.
func (d *DB) deleteUnreferencedFiles() {
	live := map[uint64]bool{}
	for _, files := range d.vs.current.Levels {
		for _, f := range files {
			live[f.Num] = true
		}
	}
	names, err := d.fs.List(d.dir)
	if err != nil {
		return
	}
	for _, n := range names {
		t, num, ok := parseFilename(n)
		if !ok {
			continue
		}
		var obsolete bool
		switch t {
		case fileTypeTable:
			obsolete = !live[num]
		case fileTypeLog:
			obsolete = num < d.vs.logNum
		case fileTypeManifest:
			obsolete = num != d.vs.manifestNum
		case fileTypeTemp:
			obsolete = true
		}
		if obsolete {
			if err := d.fs.Remove(vfs.Join(d.dir, n)); err != nil {
				d.opts.Logger.Warn("lsm: removing obsolete file", "file", n, "err", err)
			}
		}
	}
}

// deleteObsolete removes files no version refers to any more.
func (d *DB) deleteObsolete(files []*manifest.FileMetadata) {
	if d.shut.Load() {
		return
	}
	for _, f := range files {
		d.tables.evict(f.Num)
		d.cache.EvictFile(d.cacheID, f.Num)
		if err := d.fs.Remove(makeFilename(d.fs, d.dir, fileTypeTable, f.Num)); err != nil {
			d.opts.Logger.Warn("lsm: removing obsolete table", "file", f.Num, "err", err)
		}
	}
}

func (d *DB) openTable(f *manifest.FileMetadata) (*sstable.Reader, error) {
	path := makeFilename(d.fs, d.dir, fileTypeTable, f.Num)
	file, err := d.fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("lsm: opening table: %w", err)
	}
	r, err := sstable.Open(file, path, int64(f.Size), sstable.ReaderOptions{
		Cache: d.cache, CacheID: d.cacheID, FileNum: f.Num, Stats: &d.stats,
	})
	if err != nil {
		file.Close()
		return nil, err
	}
	return r, nil
}

// updateReadStateLocked publishes the current memtables and version to
// readers. d.mu must be held (or the DB not yet shared).
func (d *DB) updateReadStateLocked() {
	mems := make([]*memTable, 0, len(d.imm)+1)
	mems = append(mems, d.mem)
	for i := len(d.imm) - 1; i >= 0; i-- {
		mems = append(mems, d.imm[i])
	}
	d.vs.current.Ref()
	rs := &readState{d: d, mems: mems, version: d.vs.current, l0SeekBudget: d.l0SeekBudget(d.vs.current)}
	rs.refs.Store(1)
	d.rsMu.Lock()
	old := d.readState
	d.readState = rs
	d.rsMu.Unlock()
	if old != nil {
		old.unref()
	}
}

// loadReadState pins the current read state; nil once the DB is closed.
func (d *DB) loadReadState() *readState {
	d.rsMu.RLock()
	rs := d.readState
	if rs != nil {
		rs.refs.Add(1)
	}
	d.rsMu.RUnlock()
	return rs
}

// Close syncs the WAL, stops background work and releases the directory.
// Data written without Sync survives a clean Close.
func (d *DB) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return ErrClosed
	}
	d.closed = true
	d.shut.Store(true)
	d.flushCond.Broadcast()
	d.compactCond.Broadcast()
	d.bgCond.Broadcast()
	d.mu.Unlock()
	d.bgWG.Wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	// New writers see closed; wait for the ones already queued.
	for len(d.writers) > 0 {
		d.bgCond.Wait()
	}
	err := d.log.close()
	d.dropNextWAL()
	if d.vs.manifestFile != nil {
		if cerr := d.vs.manifestFile.Close(); err == nil {
			err = cerr
		}
	}
	d.rsMu.Lock()
	rs := d.readState
	d.readState = nil
	d.rsMu.Unlock()
	rs.unref()
	d.vs.current.Unref()
	d.tables.closeAll()
	if cerr := d.lock.Close(); err == nil {
		err = cerr
	}
	return err
}

// Err reports whether the DB still accepts writes: nil while healthy; once
// a WAL write or sync, a flush, a compaction or a MANIFEST update has failed,
// the first such failure, wrapped so that errors.Is(err, ErrWritesRefused)
// holds (and errors.Is matches the cause, such as an EIO or ENOSPC);
// ErrClosed after Close. Use it for a readiness check.
//
// The error is sticky: every later write fails with it, while reads keep
// working. Every write acknowledged before it is safe on disk (synced ones
// survive a crash, too); the failed write itself may or may not be. What an
// operator should do: fix the cause (free space, replace the disk), then
// restart the process; reopening replays the WAL and retries the flush or
// compaction. Metrics.BackgroundErrors counts the failures.
func (d *DB) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.bgErr != nil {
		return fmt.Errorf("%w: %w", ErrWritesRefused, d.bgErr)
	}
	if d.closed {
		return ErrClosed
	}
	return nil
}

// setBgErrLocked records the first failure; later writes are refused.
func (d *DB) setBgErrLocked(err error) {
	d.m.backgroundErrors.Add(1)
	if d.bgErr == nil {
		d.bgErr = err
		d.opts.Logger.Error("lsm: refusing further writes", "err", err)
	}
	d.bgCond.Broadcast()
}
