package gateway

import (
	"bytes"
	"slices"
	"sync"

	"github.com/seed84792017/cellcast/subscriptions"
)

// pubCache keeps publications' JSON by stamp. Publications never change,
// and one is sent many times: in the past results of every subscription
// that finds it and in every notification. At 10k moving users each was
// encoded about 190 times before the cache. It is bounded in entries and
// in bytes (a publication's JSON can reach ~120 KB), evicting the oldest.
//
// A stamp names a publication within one store. A cluster node renders
// publications of many shards, each stamping by its own clock, so two
// may share a stamp: an entry keeps what it was rendered from, and a
// publication that is not it is rendered afresh.
type pubCache struct {
	mu       sync.Mutex
	m        map[int64]rendered
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

// rendered is a cached rendering and what tells its publication from
// another of the same stamp (copied: callers may reuse a Publication).
type rendered struct {
	b         []byte
	tmax      int64
	uid, desc string
	cell      subscriptions.Cell
}

func renderedOf(b []byte, p *subscriptions.Publication) rendered {
	return rendered{b: b, tmax: p.Tmax, uid: p.Uid, desc: p.Desc, cell: subscriptions.Cell{NS: p.Cell.NS, ID: slices.Clone(p.Cell.ID)}}
}

// of reports whether r is p's rendering.
func (r *rendered) of(p *subscriptions.Publication) bool {
	return r.tmax == p.Tmax && r.uid == p.Uid && r.desc == p.Desc && r.cell.NS == p.Cell.NS && slices.Equal(r.cell.ID, p.Cell.ID)
}

func newPubCache(maxN, maxBytes int) *pubCache {
	return &pubCache{m: make(map[int64]rendered), maxN: maxN, maxBytes: maxBytes}
}

// get returns the cached rendering of p, or renders and caches it.
func (c *pubCache) get(p *subscriptions.Publication, render func() []byte) []byte {
	tp := p.Tp
	c.mu.Lock()
	e, ok := c.m[tp]
	c.mu.Unlock()
	if ok {
		if e.of(p) {
			return e.b
		}
		return render() // another shard's publication of the same stamp
	}
	b := render()
	if len(b) > c.maxBytes/4 {
		return b // one huge body must not empty the cache
	}
	c.mu.Lock()
	if _, ok := c.m[tp]; !ok {
		c.m[tp] = renderedOf(b, p)
		c.order = append(c.order, tp)
		c.bytes += len(b)
		for len(c.m) > c.maxN || c.bytes > c.maxBytes {
			old := c.order[c.head]
			c.head++
			c.bytes -= len(c.m[old].b)
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
