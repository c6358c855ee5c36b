package gateway

import (
	"bytes"
	"sync"
)

// pubCache keeps publications' JSON by stamp. Publications never change,
// and one is sent many times: in the past results of every subscription
// that finds it and in every notification. At 10k moving users each was
// encoded about 190 times before the cache. It is bounded in entries and
// in bytes (a publication's JSON can reach ~120 KB), evicting the oldest.
type pubCache struct {
	mu       sync.Mutex
	m        map[int64][]byte
	order    []int64 // cached stamps, oldest first, from head on
	head     int
	bytes    int
	maxN     int
	maxBytes int
}

// Default bounds of the rendered-publication cache.
const (
	pubCacheEntries = 1 << 16
	pubCacheBytes   = 32 << 20
)

func newPubCache(maxN, maxBytes int) *pubCache {
	return &pubCache{m: make(map[int64][]byte), maxN: maxN, maxBytes: maxBytes}
}

// get returns the cached JSON of the publication stamped tp, or renders
// and caches it.
func (c *pubCache) get(tp int64, render func() []byte) []byte {
	c.mu.Lock()
	b, ok := c.m[tp]
	c.mu.Unlock()
	if ok {
		return b
	}
	b = render()
	if len(b) > c.maxBytes/4 {
		return b // one huge body must not empty the cache
	}
	c.mu.Lock()
	if _, ok := c.m[tp]; !ok {
		c.m[tp] = b
		c.order = append(c.order, tp)
		c.bytes += len(b)
		for len(c.m) > c.maxN || c.bytes > c.maxBytes {
			old := c.order[c.head]
			c.head++
			c.bytes -= len(c.m[old])
			delete(c.m, old)
		}
		if c.head > len(c.order)/2 { // reclaim the evicted prefix
			c.order = append(c.order[:0], c.order[c.head:]...)
			c.head = 0
		}
	}
	c.mu.Unlock()
	return b
}

// joinJSON renders a JSON array of already encoded values.
func joinJSON(items [][]byte) []byte {
	n := 2 + len(items)
	for _, it := range items {
		n += len(it)
	}
	var b bytes.Buffer
	b.Grow(n)
	b.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(it)
	}
	b.WriteByte(']')
	return b.Bytes()
}
