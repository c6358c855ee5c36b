package memtable

import (
	"bytes"
	"sync/atomic"

	"github.com/seed84792017/cellcast/lsm/internal/base"
)

const (
	maxHeight = 12
	// nodeOverhead approximates a node's memory besides its key and value.
	nodeOverhead = 64
	slabSize     = 256 << 10
)

type frag struct {
	seq   uint64
	value []byte
	next  *frag
}

type node struct {
	key   []byte
	kind  base.Kind
	seq   uint64 // Set and Delete nodes only
	value []byte // Set nodes only
	// frags is the fragment chain of a merge node, newest first.
	frags atomic.Pointer[frag]
	// next0 is the level-0 link, kept inline: three in four nodes have no
	// other level, and every search ends on level 0.
	next0 atomic.Pointer[node]
	upper []atomic.Pointer[node] // levels 1…height-1
}

func (n *node) next(lvl int) *atomic.Pointer[node] {
	if lvl == 0 {
		return &n.next0
	}
	return &n.upper[lvl-1]
}

// Memtable is a skiplist of internal entries. Add must not be called
// concurrently with itself; every other method may run concurrently with Add.
type Memtable struct {
	head   *node
	height atomic.Int32
	size   atomic.Int64
	count  atomic.Int64
	rnd    uint64
	slab   []byte
}

// New returns an empty memtable.
func New() *Memtable {
	m := &Memtable{head: &node{upper: make([]atomic.Pointer[node], maxHeight-1)}, rnd: 0x9e3779b97f4a7c15}
	m.height.Store(1)
	return m
}

// Size is the approximate memory used, in bytes.
func (m *Memtable) Size() int64 { return m.size.Load() }

// Len is the number of entries added (each merge fragment counts).
func (m *Memtable) Len() int64 { return m.count.Load() }

// Empty reports whether nothing was added.
func (m *Memtable) Empty() bool { return m.count.Load() == 0 }

func (m *Memtable) randomHeight() int {
	h := 1
	for h < maxHeight {
		m.rnd ^= m.rnd << 13
		m.rnd ^= m.rnd >> 7
		m.rnd ^= m.rnd << 17
		if m.rnd&3 != 0 {
			break
		}
		h++
	}
	return h
}

// copyBytes copies b into the writer's slab so many small entries share one
// allocation.
func (m *Memtable) copyBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	if len(b) > slabSize/4 {
		return append([]byte(nil), b...)
	}
	if len(m.slab) < len(b) {
		m.slab = make([]byte, slabSize)
	}
	out := m.slab[:len(b):len(b)]
	copy(out, b)
	m.slab = m.slab[len(b):]
	return out
}

// findGE fills prev with the last node before userKey at each level and
// returns the first node whose user key is >= userKey.
func (m *Memtable) findGE(userKey []byte, prev *[maxHeight]*node) *node {
	x := m.head
	var next *node
	for lvl := int(m.height.Load()) - 1; lvl >= 0; lvl-- {
		for {
			next = x.next(lvl).Load()
			if next == nil || bytes.Compare(next.key, userKey) >= 0 {
				break
			}
			x = next
		}
		if prev != nil {
			prev[lvl] = x
		}
	}
	return next
}

// Add inserts an entry. Sequence numbers must increase from call to call:
// a new entry is always the newest version of its key.
func (m *Memtable) Add(seq uint64, kind base.Kind, key, value []byte) {
	var prev [maxHeight]*node
	first := m.findGE(key, &prev)
	m.count.Add(1)
	if kind == base.KindMerge && first != nil && first.kind == base.KindMerge && bytes.Equal(first.key, key) {
		// Append in place: publish the new chain head atomically.
		f := &frag{seq: seq, value: m.copyBytes(value), next: first.frags.Load()}
		first.frags.Store(f)
		m.size.Add(int64(len(value)) + 24)
		return
	}
	h := m.randomHeight()
	n := &node{key: m.copyBytes(key), kind: kind}
	if h > 1 {
		n.upper = make([]atomic.Pointer[node], h-1)
	}
	switch kind {
	case base.KindMerge:
		n.frags.Store(&frag{seq: seq, value: m.copyBytes(value)})
	case base.KindSet:
		n.seq, n.value = seq, m.copyBytes(value)
	default:
		n.seq = seq
	}
	if cur := int(m.height.Load()); h > cur {
		for lvl := cur; lvl < h; lvl++ {
			prev[lvl] = m.head
		}
		m.height.Store(int32(h))
	}
	// Link bottom-up: once level 0 is linked the node is visible, and upper
	// levels are shortcuts that readers may or may not see yet.
	for lvl := 0; lvl < h; lvl++ {
		n.next(lvl).Store(prev[lvl].next(lvl).Load())
		prev[lvl].next(lvl).Store(n)
	}
	m.size.Add(int64(len(key)+len(value)) + nodeOverhead + int64(8*h))
}

// Iter walks the memtable's internal entries in internal-key order. It sees
// entries added before each step; callers filter by sequence number.
type Iter struct {
	m    *Memtable
	node *node
	frag *frag
}

// NewIter returns an unpositioned iterator.
func (m *Memtable) NewIter() *Iter { return &Iter{m: m} }

func (it *Iter) settle() {
	it.frag = nil
	if it.node != nil && it.node.kind == base.KindMerge {
		it.frag = it.node.frags.Load()
	}
}

// First moves to the first entry.
func (it *Iter) First() {
	it.node = it.m.head.next0.Load()
	it.settle()
}

// SeekGE moves to the first entry whose user key is >= userKey.
func (it *Iter) SeekGE(userKey []byte) {
	it.node = it.m.findGE(userKey, nil)
	it.settle()
}

// Next moves to the next entry.
func (it *Iter) Next() {
	if it.frag != nil && it.frag.next != nil {
		it.frag = it.frag.next
		return
	}
	it.node = it.node.next0.Load()
	it.settle()
}

// NextUserKey moves to the first entry of the next user key.
func (it *Iter) NextUserKey() {
	it.node = it.node.next0.Load()
	it.settle()
}

// Valid reports whether the iterator is at an entry.
func (it *Iter) Valid() bool { return it.node != nil }

// Key returns the current internal key; its user key aliases the memtable.
func (it *Iter) Key() base.InternalKey {
	if it.frag != nil {
		return base.MakeKey(it.node.key, it.frag.seq, base.KindMerge)
	}
	return base.MakeKey(it.node.key, it.node.seq, it.node.kind)
}

// Value returns the current value.
func (it *Iter) Value() []byte {
	if it.frag != nil {
		return it.frag.value
	}
	return it.node.value
}
