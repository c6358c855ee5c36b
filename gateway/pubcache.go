package gateway

import (
	"bytes"
	"sync"
)

// pubCache keeps publications' JSON by stamp. Publications never change,
// and one is sent many times: in the past results of every subscription
// that finds it and in every notification. At 10k moving users each was
// encoded about 190 times before the cache.
type pubCache struct {
	mu    sync.Mutex
	m     map[int64][]byte
	order []int64 // ring of cached stamps, oldest evicted first
	next  int
}

func newPubCache(n int) *pubCache {
	return &pubCache{m: make(map[int64][]byte, n), order: make([]int64, n)}
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
	c.mu.Lock()
	if _, ok := c.m[tp]; !ok {
		if old := c.order[c.next]; old != 0 {
			delete(c.m, old)
		}
		c.order[c.next] = tp
		c.next = (c.next + 1) % len(c.order)
		c.m[tp] = b
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
