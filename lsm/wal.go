package lsm

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed84792017/cellcast/lsm/record"
	"github.com/seed84792017/cellcast/lsm/vfs"
)

// walWriter is the open write-ahead log. The commit leader appends records
// to an in-memory buffer; a sync commit writes and fsyncs it inline, while
// unsynced commits leave the write to the log's flusher goroutine, so they
// cost no syscall on the commit path. An unsynced write is in the OS within
// moments and on disk after the next sync; a crash may lose it. A caller
// that needs more waits for its position (waitFor): whoever holds flushMu
// writes (and syncs) everything appended so far, so concurrent waiters
// share one write(2) and one fsync.
type walWriter struct {
	num     uint64
	f       vfs.File
	mu      sync.Mutex // guards w's buffer
	w       *record.Writer
	flushMu sync.Mutex // serializes file writes and syncs; guards the fields below
	spare   []byte
	// err is the first write or sync error; the log is dead after it.
	err error
	// closed: close wrote and synced everything (unless err).
	closed bool
	// prev is the log before this one while it closes in the background:
	// nothing of this log reaches the file before prev's close is done,
	// and its error is this log's too. Guarded by flushMu; nil once
	// awaited.
	prev *walWriter
	// closeDone is closed when close returns, closeErr (written before)
	// its error.
	closeDone chan struct{}
	closeErr  error
	// written and synced are the log offsets the OS and the disk hold.
	written, synced atomic.Int64
	// syncing is the DB's: set by the first commit that waits for a sync.
	// From then on each log is preallocated (prealloc, below).
	syncing *atomic.Bool
	// prealloc: the log is written over zeros written and synced ahead of
	// it, through zeroed, after a record.Writer.MarkPreallocated, so that
	// its syncs are fdatasyncs that commit no new file size. Every flush
	// then syncs, at most record.PreallocWindow bytes at a time. Guarded
	// by flushMu.
	prealloc bool
	zeroed   int64
	// A waiter that finds its offset not yet written (or synced) leads: it
	// flushes for everyone, while the others wait for leaderDone and look
	// again, all at once. Waiting on flushMu instead woke them one by one,
	// each handing the lock to the next, and the fsyncs of a busy broker
	// shrank to a few commits each.
	waitMu     sync.Mutex // guards leading and leaderDone
	leading    bool
	leaderDone chan struct{}
	kick       chan struct{}
	delay      time.Duration // Options.WALFlushDelay
	done       chan struct{}
	onError    func(error)
}

func (d *DB) createWAL(num uint64) (*walWriter, error) {
	f, err := d.createWALFile(num)
	if err != nil {
		return nil, err
	}
	return d.openWAL(num, f), nil
}

// createWALFile creates log num's file, its name synced: the name must
// survive a crash before anything in it counts.
func (d *DB) createWALFile(num uint64) (vfs.File, error) {
	f, err := d.fs.Create(makeFilename(d.fs, d.dir, fileTypeLog, num))
	if err != nil {
		return nil, err
	}
	if err := syncDir(d.fs, d.dir); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// openWAL starts writing log num to its new file f.
func (d *DB) openWAL(num uint64, f vfs.File) *walWriter {
	l := &walWriter{num: num, f: f, w: record.NewWriter(f), spare: make([]byte, 0, 64<<10), kick: make(chan struct{}, 1), delay: d.opts.WALFlushDelay, done: make(chan struct{}), closeDone: make(chan struct{}), syncing: &d.walSyncing,
		onError: func(err error) {
			d.mu.Lock()
			d.setBgErrLocked(fmt.Errorf("WAL write: %w", err))
			d.mu.Unlock()
		}}
	go l.flushLoop()
	return l
}

// maxUnflushedWAL bounds what unsynced commits may leave in memory: past
// it the commit leader writes the buffer out itself.
const maxUnflushedWAL = 1 << 20

// append buffers one record and reports the log's size after it and how
// many bytes await a flush.
func (l *walWriter) append(rec []byte) (end int64, pending int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	err = l.w.Write(rec)
	return l.w.Size(), l.w.Buffered(), err
}

// flush writes out everything appended so far, and fsyncs if sync.
func (l *walWriter) flush(sync bool) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	return l.flushLocked(sync)
}

// flushLocked is flush with l.flushMu held.
func (l *walWriter) flushLocked(sync bool) error {
	l.awaitPrevLocked()
	if l.err != nil || l.closed {
		return l.err
	}
	if !l.prealloc && l.syncing.Load() {
		if err := l.startPrealloc(); err != nil {
			l.err = err
			return err
		}
	}
	l.mu.Lock()
	end := l.w.Size()
	data := l.w.Take(l.spare)
	l.mu.Unlock()
	var err error
	if l.prealloc {
		err = l.writePrealloc(data, end)
	} else {
		err = l.writeAppend(data, end, sync)
	}
	l.spare = data
	if err != nil {
		l.err = err
	}
	return err
}

// writeAppend writes data, which ends the log at end, after what the file
// holds, and fsyncs it if sync.
func (l *walWriter) writeAppend(data []byte, end int64, sync bool) error {
	if len(data) > 0 {
		if _, err := l.f.Write(data); err != nil {
			return err
		}
	}
	l.written.Store(end)
	if sync {
		if err := l.f.Sync(); err != nil {
			return err
		}
		l.synced.Store(end)
	}
	return nil
}

// walZeroChunk is how far at a time a preallocated log's zeros reach
// ahead: each step costs one sync that commits a new file size.
const walZeroChunk = 1 << 20

var walZeros = sync.OnceValue(func() []byte { return make([]byte, walZeroChunk) })

// startPrealloc syncs what the log holds, then its preallocation mark and
// the first zeros, by appending (a crash leaves a prefix of them), so that
// both are on disk before anything is written over the zeros.
func (l *walWriter) startPrealloc() error {
	l.mu.Lock()
	l.w.MarkPreallocated()
	end := l.w.Size()
	data := l.w.Take(l.spare)
	l.mu.Unlock()
	l.spare = data
	if _, err := l.f.Write(data); err != nil {
		return err
	}
	if _, err := l.f.WriteAt(walZeros(), end); err != nil {
		return err
	}
	l.written.Store(end)
	if err := l.f.Sync(); err != nil {
		return err
	}
	l.synced.Store(end)
	l.prealloc, l.zeroed = true, end+walZeroChunk
	return nil
}

// writePrealloc writes data, which ends the log at end, over the zeros,
// record.PreallocWindow bytes at a time, each fdatasynced before the next
// is written; the zeros move ahead first where data would pass them.
func (l *walWriter) writePrealloc(data []byte, end int64) error {
	off := end - int64(len(data))
	for len(data) > 0 {
		n := min(len(data), record.PreallocWindow)
		for off+int64(n) > l.zeroed {
			if _, err := l.f.WriteAt(walZeros(), l.zeroed); err != nil {
				return err
			}
			l.zeroed += walZeroChunk
		}
		if _, err := l.f.Write(data[:n]); err != nil {
			return err
		}
		off += int64(n)
		l.written.Store(off)
		if err := l.f.SyncData(); err != nil {
			return err
		}
		l.synced.Store(off)
		data = data[n:]
	}
	return nil
}

// waitFor returns once the log through off is in the OS and, if sync, on
// disk. A waiter that finds the work not done and no flush under way
// leads one for everything appended so far; the others wait for it and
// look again.
func (l *walWriter) waitFor(off int64, sync bool) error {
	if sync && !l.syncing.Load() {
		l.syncing.Store(true)
	}
	reached := func() bool {
		if sync {
			return l.synced.Load() >= off
		}
		return l.written.Load() >= off
	}
	for !reached() {
		l.waitMu.Lock()
		if l.leading {
			done := l.leaderDone
			l.waitMu.Unlock()
			<-done
			continue
		}
		l.leading, l.leaderDone = true, make(chan struct{})
		l.waitMu.Unlock()
		err := l.lead(off, sync, reached)
		l.waitMu.Lock()
		l.leading = false
		close(l.leaderDone)
		l.waitMu.Unlock()
		return err // the flush covered off, unless it failed
	}
	return nil
}

// lead flushes, and syncs if sync, unless that is done by the time it
// holds flushMu.
func (l *walWriter) lead(off int64, sync bool, reached func() bool) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if reached() {
		return nil
	}
	if l.closed {
		return l.err // close synced everything, unless it failed
	}
	return l.flushLocked(sync)
}

// requestFlush asks the flusher to write out the buffer soon.
func (l *walWriter) requestFlush() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

func (l *walWriter) flushLoop() {
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-l.kick:
			// Let the writes of the next moments ride along: one wake-up
			// and one write(2) per Options.WALFlushDelay under load, not
			// one per commit.
			t.Reset(l.delay)
			select {
			case <-l.done:
				t.Stop()
				return
			case <-t.C:
			}
			if err := l.flush(false); err != nil {
				l.onError(err)
				return
			}
		}
	}
}

// awaitPrevLocked waits, with flushMu held, until the log before this
// one is closed, and takes on its error.
func (l *walWriter) awaitPrevLocked() {
	if l.prev == nil {
		return
	}
	<-l.prev.closeDone
	if err := l.prev.closeErr; err != nil && l.err == nil {
		l.err = fmt.Errorf("the previous WAL: %w", err)
	}
	l.prev = nil
}

// waitPrev returns once every older log is closed (each close waits for
// the one before): what they hold is in the OS and on disk.
func (l *walWriter) waitPrev() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.awaitPrevLocked()
	return l.err
}

// close writes and syncs what is buffered and closes the file.
func (l *walWriter) close() error {
	close(l.done)
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	err := l.flushLocked(true)
	l.closed = true
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	if l.err == nil {
		l.err = err
	}
	l.closeErr = err
	close(l.closeDone)
	return err
}
