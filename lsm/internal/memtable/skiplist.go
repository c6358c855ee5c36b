package memtable

import (
	"bytes"
	"errors"
	"sync/atomic"

	"github.com/seed84792017/cellcast/lsm/internal/base"
)

const maxHeight = 12

// Node layout in the arena (offsets in bytes):
//
//	0  keyLen  uint32
//	4  valLen  uint32   Set nodes: the value's length; merge nodes: the
//	                    offset of the newest fragment (atomic)
//	8  seq     uint64   Set and Delete nodes
//	16 kind    uint8
//	17 height  uint8
//	20 tower   uint32 × height (atomic links, level 0 first)
//	   key, then a Set node's value
//
// Fragment layout: 0 seq uint64, 8 next uint32, 12 valLen uint32, 16 value.
const (
	nodeKeyLen  = 0
	nodeValLen  = 4
	nodeSeq     = 8
	nodeKind    = 16
	nodeHeight  = 17
	nodeTower   = 20
	fragSeq     = 0
	fragNext    = 8
	fragValLen  = 12
	fragHeader  = 16
	maxNodeSize = nodeTower + 4*maxHeight + align
)

// ErrFull is returned by Add when the arena has no room for the entry.
var ErrFull = errors.New("memtable: full")

// Memtable is a skiplist of internal entries in an arena. Add must not be
// called concurrently with itself; every other method may run concurrently
// with Add.
type Memtable struct {
	a      *arena
	filter *bloom
	head   uint32
	height atomic.Int32
	count  atomic.Int64
	size   atomic.Int64
	rnd    uint64
	// hint is, at each level, the newest node if it reaches that level,
	// else the node before it there (or the head): in key order, each
	// level's hint is at or after the one above. A key greater than the
	// newest node's starts its search there, so keys added in order (a
	// sequential load, a store keyed by time alone) cost a few
	// comparisons with nodes in cache, not a descent from the head.
	// Only the writer uses it.
	hint [maxHeight]uint32
}

// New returns an empty memtable holding up to capacity bytes of entries and
// their overhead.
func New(capacity int) *Memtable {
	m := &Memtable{a: newArena(capacity + maxNodeSize), filter: newBloom(capacity), rnd: 0x9e3779b97f4a7c15}
	m.head = m.a.alloc(nodeTower + 4*maxHeight)
	m.a.buf[m.head+nodeHeight] = maxHeight
	m.height.Store(1)
	m.size.Store(int64(m.a.size()))
	for lvl := range m.hint {
		m.hint[lvl] = m.head
	}
	return m
}

// AddFilterKey adds a string (a key prefix, say) to the memtable's filter.
// Only the writer calls it, before the Add of the entry it belongs to, so a
// reader that can see the entry also sees its filter bits.
func (m *Memtable) AddFilterKey(b []byte) { m.filter.add(b) }

// MayContain reports whether a key, or a string given to AddFilterKey, may
// be in the memtable; false means certainly not.
func (m *Memtable) MayContain(b []byte) bool { return m.filter.mayContain(b) }

// EntrySize is an upper bound on the arena bytes one entry takes.
func EntrySize(keyLen, valueLen int) int { return maxNodeSize + fragHeader + keyLen + valueLen }

// Size is the memory used, in bytes.
func (m *Memtable) Size() int64 { return m.size.Load() }

// Free is the room left, in bytes.
func (m *Memtable) Free() int { return m.a.free() }

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

func (m *Memtable) next(n uint32, lvl int) uint32 { return m.a.load32(n + nodeTower + 4*uint32(lvl)) }

func (m *Memtable) key(n uint32) []byte {
	kl := *m.a.u32(n + nodeKeyLen)
	h := uint32(m.a.buf[n+nodeHeight])
	return m.a.bytes(n+nodeTower+4*h, kl)
}

func (m *Memtable) kind(n uint32) base.Kind { return base.Kind(m.a.buf[n+nodeKind]) }

// findGE fills prev with the last node before userKey at each level and
// returns the first node whose user key is >= userKey (0 if none).
func (m *Memtable) findGE(userKey []byte, prev *[maxHeight]uint32) uint32 {
	x := m.head
	var next uint32
	for lvl := int(m.height.Load()) - 1; lvl >= 0; lvl-- {
		for {
			next = m.next(x, lvl)
			if next == 0 || bytes.Compare(m.key(next), userKey) >= 0 {
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

// findGEAfterHint is findGE for a key greater than the newest node's. It
// goes down the hints until the search moves past one: a node it moved to
// is after the newest one, and so after every lower level's hint too.
func (m *Memtable) findGEAfterHint(userKey []byte, prev *[maxHeight]uint32) uint32 {
	x := m.head
	moved := false
	var next uint32
	for lvl := int(m.height.Load()) - 1; lvl >= 0; lvl-- {
		if !moved {
			x = m.hint[lvl]
		}
		for {
			next = m.next(x, lvl)
			if next == 0 || bytes.Compare(m.key(next), userKey) >= 0 {
				break
			}
			x, moved = next, true
		}
		prev[lvl] = x
	}
	return next
}

// Add inserts an entry. Sequence numbers must increase from call to call:
// a new entry is always the newest version of its key. It returns ErrFull,
// changing nothing, when the entry does not fit.
func (m *Memtable) Add(seq uint64, kind base.Kind, key, value []byte) error {
	m.filter.add(key)
	var prev [maxHeight]uint32
	var first uint32
	if newest := m.hint[0]; newest != m.head && bytes.Compare(m.key(newest), key) < 0 {
		first = m.findGEAfterHint(key, &prev)
	} else {
		first = m.findGE(key, &prev)
	}
	a := m.a
	if kind == base.KindMerge && first != 0 && m.kind(first) == base.KindMerge && bytes.Equal(m.key(first), key) {
		// Append in place: publish the new chain head atomically.
		f := a.alloc(fragHeader + len(value))
		if f == 0 {
			return ErrFull
		}
		*a.u64(f + fragSeq) = seq
		*a.u32(f + fragNext) = a.load32(first + nodeValLen)
		*a.u32(f + fragValLen) = uint32(len(value))
		copy(a.buf[f+fragHeader:], value)
		a.store32(first+nodeValLen, f)
		m.count.Add(1)
		m.size.Store(int64(a.size()))
		return nil
	}
	h := m.randomHeight()
	keyAt := uint32(nodeTower + 4*h)
	size := int(keyAt) + len(key)
	if kind == base.KindSet {
		size += len(value)
	}
	n := a.alloc(size)
	if n == 0 {
		return ErrFull
	}
	var frag uint32
	if kind == base.KindMerge {
		if frag = a.alloc(fragHeader + len(value)); frag == 0 {
			a.n = n // give the node back
			return ErrFull
		}
		*a.u64(frag + fragSeq) = seq
		*a.u32(frag + fragValLen) = uint32(len(value))
		copy(a.buf[frag+fragHeader:], value)
	}
	*a.u32(n + nodeKeyLen) = uint32(len(key))
	a.buf[n+nodeKind] = byte(kind)
	a.buf[n+nodeHeight] = byte(h)
	*a.u64(n + nodeSeq) = seq
	copy(a.buf[n+keyAt:], key)
	switch kind {
	case base.KindSet:
		*a.u32(n + nodeValLen) = uint32(len(value))
		copy(a.buf[n+keyAt+uint32(len(key)):], value)
	case base.KindMerge:
		*a.u32(n + nodeValLen) = frag
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
		link := uint32(nodeTower + 4*lvl)
		*a.u32(n + link) = a.load32(prev[lvl] + link)
		a.store32(prev[lvl]+link, n)
		m.hint[lvl] = n
	}
	for lvl := h; lvl < int(m.height.Load()); lvl++ {
		m.hint[lvl] = prev[lvl]
	}
	m.count.Add(1)
	m.size.Store(int64(a.size()))
	return nil
}

// Iter walks the memtable's internal entries in internal-key order. It sees
// entries added before each step; callers filter by sequence number.
type Iter struct {
	m    *Memtable
	node uint32
	frag uint32 // current fragment of a merge node, else 0
}

// NewIter returns an unpositioned iterator.
func (m *Memtable) NewIter() *Iter { return &Iter{m: m} }

// InitIter makes it an unpositioned iterator over m, in place.
func (m *Memtable) InitIter(it *Iter) { *it = Iter{m: m} }

func (it *Iter) settle() {
	it.frag = 0
	if it.node != 0 && it.m.kind(it.node) == base.KindMerge {
		it.frag = it.m.a.load32(it.node + nodeValLen)
	}
}

// First moves to the first entry.
func (it *Iter) First() {
	it.node = it.m.next(it.m.head, 0)
	it.settle()
}

// SeekGE moves to the first entry whose user key is >= userKey.
func (it *Iter) SeekGE(userKey []byte) {
	it.node = it.m.findGE(userKey, nil)
	it.settle()
}

// Next moves to the next entry.
func (it *Iter) Next() {
	if it.frag != 0 {
		if next := *it.m.a.u32(it.frag + fragNext); next != 0 {
			it.frag = next
			return
		}
	}
	it.NextUserKey()
}

// NextUserKey moves to the first entry of the next user key.
func (it *Iter) NextUserKey() {
	it.node = it.m.next(it.node, 0)
	it.settle()
}

// Valid reports whether the iterator is at an entry.
func (it *Iter) Valid() bool { return it.node != 0 }

// Key returns the current internal key; its user key aliases the memtable.
func (it *Iter) Key() base.InternalKey {
	a := it.m.a
	if it.frag != 0 {
		return base.MakeKey(it.m.key(it.node), *a.u64(it.frag + fragSeq), base.KindMerge)
	}
	return base.MakeKey(it.m.key(it.node), *a.u64(it.node + nodeSeq), it.m.kind(it.node))
}

// Value returns the current value; it aliases the memtable.
func (it *Iter) Value() []byte {
	a := it.m.a
	if it.frag != 0 {
		return a.bytes(it.frag+fragHeader, *a.u32(it.frag + fragValLen))
	}
	if it.m.kind(it.node) != base.KindSet {
		return nil
	}
	kl := *a.u32(it.node + nodeKeyLen)
	h := uint32(a.buf[it.node+nodeHeight])
	return a.bytes(it.node+nodeTower+4*h+kl, *a.u32(it.node + nodeValLen))
}
