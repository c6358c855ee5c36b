package secondary

import (
	"sync"

	"github.com/google/btree"
)

// memIndex maps an Embedded (or hierarchy) attribute's values to the rows
// written since the primary table's last flush. The memtable has no
// blocks to summarize, so without it every lookup would read the whole
// memtable; with it the scan reads tables only (lsm.IterOptions
// .SkipMemtables) and takes the memtable's rows from here.
//
// Entries carry the lsm sequence number of their write and leave once a
// flush has put that write in a table (lsm.DB.FlushedSeq), so the index
// holds about one memtable's worth of rows, plus at most a run.
type memIndex struct {
	mu   sync.Mutex
	gens []*memGen // oldest first
}

// memGen is a run of consecutive writes. Pruning drops whole runs, which
// costs nothing per entry; a run partly flushed stays until the rest is,
// leaving only duplicates of rows the tables hold too.
type memGen struct {
	last    uint64 // the lsm sequence number of its newest write
	n       int
	entries *btree.BTreeG[memEntry] // by value, then write
}

// genSize is how many writes a run holds.
const genSize = 4096

type memEntry struct {
	value  string // the value's encoding
	lsmSeq uint64
	p      posting
}

func memLess(a, b memEntry) bool {
	if a.value != b.value {
		return a.value < b.value
	}
	return a.lsmSeq < b.lsmSeq
}

func newMemIndex() *memIndex { return &memIndex{} }

// add files a write; writes come in sequence order.
func (m *memIndex) add(lsmSeq uint64, v Value, p posting) {
	e := memEntry{string(v.appendKey(nil)), lsmSeq, p}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.gens) == 0 || m.gens[len(m.gens)-1].n == genSize {
		m.gens = append(m.gens, &memGen{entries: btree.NewG(32, memLess)})
	}
	g := m.gens[len(m.gens)-1]
	g.entries.ReplaceOrInsert(e)
	g.last = lsmSeq
	g.n++
}

// prune drops the runs whose writes are all numbered below flushed: they
// are in tables now.
func (m *memIndex) prune(flushed uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for n < len(m.gens) && m.gens[n].last < flushed {
		n++
	}
	m.gens = append(m.gens[:0], m.gens[n:]...)
}

// collect returns the entries with a value in [lo, hi] (encoded).
func (m *memIndex) collect(lo, hi []byte) []memEntry {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []memEntry
	for _, g := range m.gens {
		g.entries.AscendGreaterOrEqual(memEntry{value: string(lo)}, func(e memEntry) bool {
			if e.value > string(hi) {
				return false
			}
			out = append(out, e)
			return true
		})
	}
	return out
}
