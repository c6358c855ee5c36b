package memtable

import (
	"sync/atomic"
	"unsafe"
)

// arena is one fixed block of memory that nodes, keys, values and merge
// fragments are carved from. It holds no Go pointers, so the garbage
// collector never scans it and linking nodes costs no write barriers; links
// are 32-bit offsets. Only the writer allocates; readers only follow offsets
// published with atomic stores, and the block never moves.
type arena struct {
	buf []byte
	n   uint32 // bytes used; offset 0 is reserved as "nil"
}

const align = 8

func newArena(capacity int) *arena {
	// uint64-backed so every aligned offset is aligned in memory too.
	words := make([]uint64, (capacity+align-1)/align+1)
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	return &arena{buf: buf, n: align}
}

// alloc returns the offset of size fresh bytes, 8-aligned, or 0 when full.
func (a *arena) alloc(size int) uint32 {
	off := (a.n + align - 1) &^ (align - 1)
	end := uint64(off) + uint64(size)
	if end > uint64(len(a.buf)) {
		return 0
	}
	a.n = uint32(end)
	return off
}

func (a *arena) size() int { return int(a.n) }

func (a *arena) free() int { return len(a.buf) - int(a.n) }

func (a *arena) bytes(off, n uint32) []byte { return a.buf[off : off+n : off+n] }

func (a *arena) u32(off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&a.buf[off])) }

func (a *arena) u64(off uint32) *uint64 { return (*uint64)(unsafe.Pointer(&a.buf[off])) }

func (a *arena) load32(off uint32) uint32     { return atomic.LoadUint32(a.u32(off)) }
func (a *arena) store32(off uint32, v uint32) { atomic.StoreUint32(a.u32(off), v) }
