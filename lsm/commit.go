package lsm

import (
	"fmt"
	"sync"
	"time"

	"github.com/seed84792017/cellcast/lsm/internal/memtable"
)

// writer is one caller waiting in the commit queue.
type writer struct {
	batch *Batch
	sync  bool
	// force switches to a new memtable even if the current one has room.
	force bool
	// noWait leaves the WAL write to a later WaitWAL(pos).
	noWait bool
	pos    WALPos
	done   bool
	err    error
	// ready wakes a queued writer once: when its group is done, or when
	// it reaches the head of the queue and leads. A channel, not a
	// sync.Cond on d.mu: a group's writers return without taking d.mu
	// again, one after another, while the next leader wants it.
	ready chan struct{}
}

// Apply commits a batch atomically: it is in the WAL (synced if opts.Sync)
// and visible to reads when Apply returns nil. The batch may be reused
// once Apply returns.
func (d *DB) Apply(b *Batch, opts *WriteOptions) error {
	if b == nil || b.Empty() {
		return nil
	}
	w := writerPool.Get().(*writer)
	*w = writer{batch: b, sync: opts != nil && opts.Sync, ready: w.ready}
	err := d.commit(w)
	writerPool.Put(w)
	return err
}

// WALPos is where a commit's record ends in the write-ahead log.
type WALPos struct {
	log uint64
	off int64
}

// ApplyNoSyncWait commits b like Apply without Sync and returns where its
// WAL record ends: the batch is visible to reads at once, and reaches the
// OS, or the disk, only by a later WaitWAL(pos) (or within moments, by the
// log's own flusher). A caller that orders its commits under a lock of its
// own applies under the lock and waits after releasing it, so concurrent
// commits share one fsync.
func (d *DB) ApplyNoSyncWait(b *Batch) (WALPos, error) {
	if b == nil || b.Empty() {
		return WALPos{}, nil
	}
	w := writerPool.Get().(*writer)
	*w = writer{batch: b, noWait: true, ready: w.ready}
	err := d.commit(w)
	pos := w.pos
	writerPool.Put(w)
	return pos, err
}

// WaitWAL returns once the WAL holds everything through pos in the OS and,
// if sync, on disk. Concurrent calls share one write(2) and one fsync.
func (d *DB) WaitWAL(pos WALPos, sync bool) error {
	d.mu.Lock()
	log := d.log
	d.mu.Unlock()
	if log == nil {
		return nil
	}
	wait := func() error { return log.waitFor(pos.off, sync) }
	if log.num > pos.log {
		wait = log.waitPrev // an older log: its close syncs it
	}
	if err := wait(); err != nil {
		// Sticky, as for a write that waits in Apply: no later batch may
		// reach the memtable behind a WAL that lost an earlier one.
		err = fmt.Errorf("WAL write: %w", err)
		d.mu.Lock()
		d.setBgErrLocked(err)
		d.mu.Unlock()
		return fmt.Errorf("%w: %w", ErrWritesRefused, err)
	}
	return nil
}

var (
	writerPool = sync.Pool{New: func() any { return &writer{ready: make(chan struct{}, 1)} }}
	batchPool  = sync.Pool{New: func() any { return new(Batch) }}
)

// applyOne commits a single-entry batch from the pool.
func (d *DB) applyOne(kind Kind, key, value []byte, opts *WriteOptions) error {
	b := batchPool.Get().(*Batch)
	b.Reset()
	err := b.add(kind, key, value)
	if err == nil {
		err = d.Apply(b, opts)
	}
	if cap(b.data) <= 64<<10 {
		batchPool.Put(b)
	}
	return err
}

// Set writes one key.
func (d *DB) Set(key, value []byte, opts *WriteOptions) error {
	return d.applyOne(KindSet, key, value, opts)
}

// Delete removes one key.
func (d *DB) Delete(key []byte, opts *WriteOptions) error {
	return d.applyOne(KindDelete, key, nil, opts)
}

// Merge appends one fragment to key's value list.
func (d *DB) Merge(key, fragment []byte, opts *WriteOptions) error {
	return d.applyOne(KindMerge, key, fragment, opts)
}

const maxGroupBytes = 1 << 20

// commit queues w; the writer at the head of the queue leads a group: it
// writes the group's batches as one WAL record, syncs once if any asked,
// applies them to the memtable and wakes the others.
func (d *DB) commit(w *writer) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return ErrClosed
	}
	d.writers = append(d.writers, w)
	if d.writers[0] != w {
		d.mu.Unlock()
		<-w.ready
		if w.done { // set before the wake-up
			return w.err
		}
		d.mu.Lock() // at the head: lead
	}
	group := d.writers[:1]
	need := 0
	if w.batch != nil {
		size := w.batch.Size()
		for _, o := range d.writers[1:] {
			if o.batch == nil || o.force || (o.sync && !w.sync) || size+o.batch.Size() > maxGroupBytes {
				break
			}
			size += o.batch.Size()
			group = d.writers[:len(group)+1]
		}
		for _, o := range group {
			need += o.batch.Size() + o.batch.Count()*memtable.EntrySize(0, 0)
		}
	}
	err := d.makeRoomForWrite(w.force, need)
	if err == nil && w.batch != nil {
		err = d.writeGroup(group)
	}
	for _, o := range group {
		o.done, o.err = true, err
		if o != w {
			o.ready <- struct{}{}
		}
	}
	d.writers = d.writers[len(group):]
	if len(d.writers) > 0 {
		d.writers[0].ready <- struct{}{}
	} else if d.closed {
		d.bgCond.Broadcast()
	}
	d.mu.Unlock()
	return err
}

// writeGroup is called by the leader with d.mu held; it releases d.mu for
// the I/O. Only the leader touches the WAL and the memtable's writer side
// (for a synced group, through a helper goroutine it waits for).
func (d *DB) writeGroup(group []*writer) error {
	seq := d.lastSeq + 1
	var n uint64
	sync := false
	for _, o := range group {
		o.batch.setSeq(seq + n)
		n += uint64(o.batch.Count())
		sync = sync || o.sync
	}
	d.lastSeq += n
	log, mem := d.log, d.mem
	d.mu.Unlock()

	rec := group[0].batch.data
	if len(group) > 1 {
		// One record for the group: the first batch's header with the
		// total count, then every batch's entries.
		rec = append([]byte(nil), rec...)
		for _, o := range group[1:] {
			rec = append(rec, o.batch.data[batchHeaderLen:]...)
		}
		putCount(rec, uint32(n))
	}
	end, pending, err := log.append(rec)
	for _, o := range group {
		o.pos = WALPos{log: log.num, off: end}
	}
	apply := func() error {
		for _, o := range group {
			// makeRoomForWrite reserved room, so a full memtable here is a
			// bug; refuse further writes rather than lose the entry.
			if err := applyBatch(mem.Memtable, o.batch, d.opts.FilterPrefixes); err != nil {
				return err
			}
		}
		return nil
	}
	if err == nil {
		switch {
		case sync:
			// The leader syncs at once, with no hand-off to another
			// goroutine on the way to the fsync, while a helper fills the
			// memtable; the next group waits for both. The entries stay
			// invisible until visibleSeq passes them, after a good sync;
			// after a failed one the DB refuses writes and flushes no
			// memtable, so they never surface.
			applied := make(chan error, 1)
			go func() { applied <- apply() }()
			err = log.waitFor(end, true)
			if aerr := <-applied; err == nil {
				err = aerr
			}
		case pending > maxUnflushedWAL:
			if err = log.flush(false); err == nil {
				err = apply()
			}
		default:
			log.requestFlush()
			err = apply()
		}
	}
	d.m.userBytes.Add(int64(len(rec)))
	d.m.walBytes.Add(int64(len(rec)))

	d.mu.Lock()
	if err != nil {
		err = fmt.Errorf("WAL write or memtable apply: %w", err)
		d.setBgErrLocked(err)
		return fmt.Errorf("%w: %w", ErrWritesRefused, err)
	}
	d.visibleSeq.Store(seq + n - 1)
	return nil
}

func putCount(rec []byte, n uint32) {
	rec[8], rec[9], rec[10], rec[11] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
}

// applyBatch adds a batch's entries to a memtable, with each key's filter
// prefixes in the memtable's filter.
func applyBatch(m *memtable.Memtable, b *Batch, prefixes func([]byte, func([]byte))) error {
	r, err := newBatchReader(b.data)
	if err != nil {
		return err
	}
	seq := r.seq
	for {
		kind, key, value, ok, err := r.next()
		if err != nil || !ok {
			return err
		}
		if prefixes != nil {
			prefixes(key, m.AddFilterKey)
		}
		if err := m.Add(seq, kind, key, value); err != nil {
			return err
		}
		seq++
	}
}

// makeRoomForWrite runs with d.mu held by the commit leader. It delays or
// stalls the write while L0 or the flush queue is too full, and switches to
// a new memtable and WAL when need bytes do not fit in the current one (or
// force).
func (d *DB) makeRoomForWrite(force bool, need int) error {
	slowed := false
	for {
		if d.bgErr != nil {
			return fmt.Errorf("%w: %w", ErrWritesRefused, d.bgErr)
		}
		if d.closed {
			return ErrClosed
		}
		l0 := d.vs.current.L0Depth()
		switch {
		case !slowed && l0 >= d.opts.L0SlowdownWritesThreshold:
			// Give compaction a little room rather than stalling later.
			d.mu.Unlock()
			time.Sleep(time.Millisecond)
			d.mu.Lock()
			slowed = true
			d.m.slowdowns.Add(1)
		case !force && need <= d.mem.Free():
			return nil
		case force && d.mem.Empty():
			return nil
		case len(d.imm) >= d.opts.MemTableStopWritesThreshold || l0 >= d.opts.L0StopWritesThreshold:
			start := time.Now()
			d.m.stalls.Add(1)
			d.bgCond.Wait()
			d.m.stallNanos.Add(int64(time.Since(start)))
		default:
			if err := d.switchMemtable(need); err != nil {
				d.setBgErrLocked(err)
				return fmt.Errorf("%w: %w", ErrWritesRefused, err)
			}
			force = false
		}
	}
}

// switchMemtable makes the memtable immutable and starts a new one, large
// enough for need bytes, with a new WAL. The old WAL's last write and sync
// run in the background, not under d.mu: the new one writes nothing until
// they are done (walWriter.prev), so a later crash cannot keep newer
// writes while losing older ones. Synced in line, they stalled every
// writer for 7–30 ms at each switch on a busy broker.
func (d *DB) switchMemtable(need int) error {
	w, err := d.takeWAL()
	if err != nil {
		return fmt.Errorf("creating WAL: %w", err)
	}
	num := w.num
	old := d.log
	w.prev = old
	d.bgWG.Add(1)
	go func() {
		defer d.bgWG.Done()
		if err := old.close(); err != nil {
			d.mu.Lock()
			d.setBgErrLocked(fmt.Errorf("closing WAL: %w", err))
			d.mu.Unlock()
		}
	}()
	d.log = w
	d.imm = append(d.imm, d.mem)
	d.mem = d.newMemTable(num, need)
	d.mem.wal = w
	d.updateReadStateLocked()
	d.flushCond.Signal()
	return nil
}
