package memtable

import (
	"hash/maphash"
	"sync/atomic"
)

// bloom is the memtable's filter of keys and filter prefixes, so a read can
// skip a memtable without searching it. The writer sets bits with atomic
// ORs before the entry is linked; readers test with atomic loads.
type bloom struct {
	words []uint64
	seed  maphash.Seed
}

const bloomProbes = 4

func newBloom(capacity int) *bloom {
	// About one bit per 4 bytes of memtable: ~25 bits per 100-byte entry,
	// leaving room for the entries' prefixes.
	n := max(capacity/256, 1024)
	return &bloom{words: make([]uint64, n), seed: maphash.MakeSeed()}
}

func (b *bloom) add(key []byte) {
	h := maphash.Bytes(b.seed, key)
	delta := h>>33 | 1
	nbits := uint64(len(b.words)) * 64
	for i := 0; i < bloomProbes; i++ {
		bit := h % nbits
		atomic.OrUint64(&b.words[bit/64], 1<<(bit%64))
		h += delta
	}
}

func (b *bloom) mayContain(key []byte) bool {
	h := maphash.Bytes(b.seed, key)
	delta := h>>33 | 1
	nbits := uint64(len(b.words)) * 64
	for i := 0; i < bloomProbes; i++ {
		bit := h % nbits
		if atomic.LoadUint64(&b.words[bit/64])&(1<<(bit%64)) == 0 {
			return false
		}
		h += delta
	}
	return true
}
