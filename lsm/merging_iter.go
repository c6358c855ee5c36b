package lsm

import (
	"bytes"

	"github.com/seed84792017/cellcast/lsm/internal/base"
)

// mergingIter merges children with a min-heap on internal keys. Each heap
// item caches its child's key, so ordering costs no interface calls, and a
// move of the smallest child that leaves it smallest (the common case when
// one level holds most of the keys) costs two comparisons and no swap.
type mergingIter struct {
	iters []internalIterator
	h     []mergeItem
	err   error
}

type mergeItem struct {
	it  internalIterator
	key base.InternalKey
}

func newMergingIter(iters []internalIterator) *mergingIter {
	return &mergingIter{iters: iters, h: make([]mergeItem, 0, len(iters))}
}

// less orders by user key, then newest (largest trailer) first.
func less(a, b *base.InternalKey) bool {
	if c := bytes.Compare(a.UserKey, b.UserKey); c != 0 {
		return c < 0
	}
	return a.Trailer > b.Trailer
}

func (m *mergingIter) init() {
	m.h = m.h[:0]
	m.err = nil
	for _, it := range m.iters {
		if it.Valid() {
			m.h = append(m.h, mergeItem{it: it, key: it.Key()})
		} else if err := it.Error(); err != nil {
			m.err = err
		}
	}
	for i := len(m.h)/2 - 1; i >= 0; i-- {
		m.down(i)
	}
}

// down restores the heap below i.
func (m *mergingIter) down(i int) {
	h := m.h
	n := len(h)
	for {
		j := 2*i + 1
		if j >= n {
			return
		}
		if r := j + 1; r < n && less(&h[r].key, &h[j].key) {
			j = r
		}
		if !less(&h[j].key, &h[i].key) {
			return
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}

func (m *mergingIter) First() {
	for _, it := range m.iters {
		it.First()
	}
	m.init()
}

func (m *mergingIter) SeekGE(userKey []byte) {
	for _, it := range m.iters {
		it.SeekGE(userKey)
	}
	m.init()
}

func (m *mergingIter) Next() {
	top := &m.h[0]
	top.it.Next()
	if top.it.Valid() {
		top.key = top.it.Key()
		m.down(0)
		return
	}
	if err := top.it.Error(); err != nil {
		m.err = err
	}
	n := len(m.h) - 1
	m.h[0] = m.h[n]
	m.h = m.h[:n]
	m.down(0)
}

func (m *mergingIter) Valid() bool           { return m.err == nil && len(m.h) > 0 }
func (m *mergingIter) Key() base.InternalKey { return m.h[0].key }
func (m *mergingIter) Value() []byte         { return m.h[0].it.Value() }
func (m *mergingIter) Error() error          { return m.err }

// top is the child at the current entry.
func (m *mergingIter) top() internalIterator { return m.h[0].it }

func (m *mergingIter) Close() error {
	for _, it := range m.iters {
		it.Close()
	}
	return nil
}
