package lsm

import (
	"container/list"
	"sync"

	"github.com/seed84792017/cellcast/lsm/internal/manifest"
	"github.com/seed84792017/cellcast/lsm/sstable"
)

// tableCache keeps up to capacity table readers open. An evicted reader is
// closed once its last user releases it.
type tableCache struct {
	d        *DB
	mu       sync.Mutex
	capacity int
	m        map[uint64]*tableEntry
	lru      list.List // of *tableEntry, front = most recent
}

type tableEntry struct {
	num     uint64
	reader  *sstable.Reader
	err     error
	loaded  chan struct{}
	refs    int // users plus one for being in the cache
	elem    *list.Element
	evicted bool
}

func newTableCache(d *DB, capacity int) *tableCache {
	return &tableCache{d: d, capacity: capacity, m: map[uint64]*tableEntry{}}
}

// tableRef is one use of a cached reader; release ends it. It is a value,
// not a closure, so that a read allocates nothing to hold it.
type tableRef struct {
	c *tableCache
	e *tableEntry
}

// release ends the use; the zero tableRef's does nothing.
func (r tableRef) release() {
	if r.e != nil {
		r.c.release(r.e)
	}
}

// get returns an open reader for the file and the reference that keeps
// it open.
func (c *tableCache) get(f *manifest.FileMetadata) (*sstable.Reader, tableRef, error) {
	c.mu.Lock()
	e := c.m[f.Num]
	if e != nil {
		e.refs++
		c.lru.MoveToFront(e.elem)
		c.mu.Unlock()
		<-e.loaded
	} else {
		e = &tableEntry{num: f.Num, loaded: make(chan struct{}), refs: 2}
		e.elem = c.lru.PushFront(e)
		c.m[f.Num] = e
		c.evictLocked()
		c.mu.Unlock()
		e.reader, e.err = c.d.openTable(f)
		close(e.loaded)
	}
	if e.err != nil {
		c.release(e)
		c.mu.Lock()
		// Do not cache failures: a later attempt may succeed.
		if c.m[f.Num] == e {
			c.removeLocked(e)
		}
		c.mu.Unlock()
		return nil, tableRef{}, e.err
	}
	return e.reader, tableRef{c, e}, nil
}

func (c *tableCache) release(e *tableEntry) {
	c.mu.Lock()
	e.refs--
	closeNow := e.refs == 0
	c.mu.Unlock()
	if closeNow && e.reader != nil {
		e.reader.Close()
	}
}

func (c *tableCache) removeLocked(e *tableEntry) {
	if e.evicted {
		return
	}
	e.evicted = true
	delete(c.m, e.num)
	c.lru.Remove(e.elem)
	e.refs--
	if e.refs == 0 && e.reader != nil {
		// Close outside the critical path is not worth it: Close is cheap.
		e.reader.Close()
	}
}

func (c *tableCache) evictLocked() {
	for c.lru.Len() > c.capacity {
		c.removeLocked(c.lru.Back().Value.(*tableEntry))
	}
}

// evict drops a file's reader, e.g. when the file became obsolete.
func (c *tableCache) evict(num uint64) {
	c.mu.Lock()
	if e := c.m[num]; e != nil {
		c.removeLocked(e)
	}
	c.mu.Unlock()
}

// closeAll closes every cached reader; users must be done.
func (c *tableCache) closeAll() {
	c.mu.Lock()
	for _, e := range c.m {
		c.removeLocked(e)
	}
	c.mu.Unlock()
}

func (c *tableCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
