package sstable

import (
	"sync"
	"sync/atomic"
)

const cacheShards = 16

// maxFree bounds a shard's recycled entries.
const maxFree = 64

// Cache is a sharded LRU cache of decompressed, verified blocks, bounded in
// bytes. One Cache may be shared by several DBs; each takes an id from NewID.
type Cache struct {
	shards [cacheShards]cacheShard
	nextID atomic.Uint64
	hits   atomic.Int64
	misses atomic.Int64
}

type cacheKey struct {
	id, file, off uint64
}

type cacheEntry struct {
	key        cacheKey
	val        []byte
	prev, next *cacheEntry
}

type cacheShard struct {
	mu       sync.Mutex
	capacity int64
	size     int64
	m        map[cacheKey]*cacheEntry
	// head is a sentinel: head.next is the most recently used entry.
	head cacheEntry
	// free holds evicted entries for the next Sets: a full cache evicts
	// about one entry per insert, so entries are recycled, not allocated.
	free []*cacheEntry
}

// NewCache returns a cache holding up to capacity bytes of blocks. A capacity
// of zero caches nothing.
func NewCache(capacity int64) *Cache {
	c := &Cache{}
	for i := range c.shards {
		s := &c.shards[i]
		s.capacity = capacity / cacheShards
		s.m = map[cacheKey]*cacheEntry{}
		s.head.next, s.head.prev = &s.head, &s.head
	}
	return c
}

// NewID returns an id that separates one user's blocks from another's.
func (c *Cache) NewID() uint64 { return c.nextID.Add(1) }

func (c *Cache) shard(k cacheKey) *cacheShard {
	h := k.id*0x9e3779b97f4a7c15 ^ k.file*0xbf58476d1ce4e5b9 ^ k.off*0x94d049bb133111eb
	return &c.shards[(h>>32)%cacheShards]
}

// Get returns the cached block or nil.
func (c *Cache) Get(id, file, off uint64) []byte {
	k := cacheKey{id, file, off}
	s := c.shard(k)
	s.mu.Lock()
	var val []byte
	e := s.m[k]
	if e != nil {
		s.unlink(e)
		s.pushFront(e)
		// Read under the lock: a concurrent Set of the same key replaces e.val.
		val = e.val
	}
	s.mu.Unlock()
	if e == nil {
		c.misses.Add(1)
		return nil
	}
	c.hits.Add(1)
	return val
}

// Set inserts a block, evicting the least recently used ones past capacity.
func (c *Cache) Set(id, file, off uint64, val []byte) {
	k := cacheKey{id, file, off}
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if int64(len(val)) > s.capacity {
		return
	}
	if e := s.m[k]; e != nil {
		s.size += int64(len(val) - len(e.val))
		e.val = val
		s.unlink(e)
		s.pushFront(e)
	} else {
		if n := len(s.free); n > 0 {
			e, s.free = s.free[n-1], s.free[:n-1]
			*e = cacheEntry{key: k, val: val}
		} else {
			e = &cacheEntry{key: k, val: val}
		}
		s.m[k] = e
		s.pushFront(e)
		s.size += int64(len(val))
	}
	for s.size > s.capacity {
		old := s.head.prev
		s.unlink(old)
		delete(s.m, old.key)
		s.size -= int64(len(old.val))
		if len(s.free) < maxFree {
			*old = cacheEntry{}
			s.free = append(s.free, old)
		}
	}
}

// EvictFile drops every block of one file, e.g. after the file was deleted.
func (c *Cache) EvictFile(id, file uint64) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for k, e := range s.m {
			if k.id == id && k.file == file {
				s.unlink(e)
				delete(s.m, k)
				s.size -= int64(len(e.val))
			}
		}
		s.mu.Unlock()
	}
}

// Size is the number of bytes cached.
func (c *Cache) Size() int64 {
	var n int64
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += s.size
		s.mu.Unlock()
	}
	return n
}

// Hits and Misses count Get outcomes since the cache was made.
func (c *Cache) Hits() int64   { return c.hits.Load() }
func (c *Cache) Misses() int64 { return c.misses.Load() }

func (s *cacheShard) unlink(e *cacheEntry) {
	e.prev.next = e.next
	e.next.prev = e.prev
}

func (s *cacheShard) pushFront(e *cacheEntry) {
	e.next = s.head.next
	e.prev = &s.head
	s.head.next.prev = e
	s.head.next = e
}
