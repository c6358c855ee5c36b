package secondary

import (
	"bytes"
	"sync"
)

// memIndex maps an Embedded (or hierarchy) attribute's values to the rows
// written since the primary table's last flush. The memtable has no
// blocks to summarize, so without it every lookup would read the whole
// memtable; with it the scan reads tables only (lsm.IterOptions
// .SkipMemtables) and takes the memtable's rows from here.
//
// Entries carry the lsm sequence number of their write and leave once a
// flush has put that write in a table (lsm.DB.FlushedSeq), so the index
// holds about one memtable's worth of rows.
type memIndex struct {
	mu      sync.Mutex
	byValue map[string][]memEntry // the value's encoding → entries, oldest first
	order   []memEntry            // every entry, oldest first, for pruning
}

type memEntry struct {
	lsmSeq uint64
	value  string // the value's encoding
	p      posting
}

func newMemIndex() *memIndex { return &memIndex{byValue: map[string][]memEntry{}} }

// add files a write; writes come in sequence order.
func (m *memIndex) add(lsmSeq uint64, v Value, p posting) {
	e := memEntry{lsmSeq, string(v.appendKey(nil)), p}
	m.mu.Lock()
	m.byValue[e.value] = append(m.byValue[e.value], e)
	m.order = append(m.order, e)
	m.mu.Unlock()
}

// prune drops the entries of writes numbered below flushed: they are in
// tables now.
func (m *memIndex) prune(flushed uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for n < len(m.order) && m.order[n].lsmSeq < flushed {
		e := m.order[n]
		// Each value's list is in write order too: e is at its front.
		if list := m.byValue[e.value][1:]; len(list) > 0 {
			m.byValue[e.value] = list
		} else {
			delete(m.byValue, e.value)
		}
		n++
	}
	if n > 0 {
		m.order = append(m.order[:0], m.order[n:]...)
	}
}

// collect returns the postings with a value in [lo, hi] (encoded).
func (m *memIndex) collect(lo, hi []byte) []posting {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []posting
	if bytes.Equal(lo, hi) {
		for _, e := range m.byValue[string(lo)] {
			out = append(out, e.p)
		}
		return out
	}
	for v, list := range m.byValue {
		if v >= string(lo) && v <= string(hi) {
			for _, e := range list {
				out = append(out, e.p)
			}
		}
	}
	return out
}

// size is the number of entries held.
func (m *memIndex) size() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.order)
}
