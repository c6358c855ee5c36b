package memtable

import (
	"hash/maphash"
	"sync/atomic"
)

// bloom is the memtable's filter of keys and filter prefixes, so a read can
// skip a memtable without searching it. The writer sets bits with atomic
// ORs before the entry is linked; readers test with atomic loads.
//
// It is blocked: a key's probes all fall in one 512-bit block (a cache
// line), so an add or a test costs one cache miss, not one per probe. A
// bit already set is not written again: the filter's hot bits (the
// ancestors every write in a neighbourhood names) stay shared in both
// cores' caches instead of moving between them.
type bloom struct {
	words  []uint64
	blocks uint64
	seed   maphash.Seed
}

const (
	bloomProbes     = 4
	bloomBlockWords = 8 // 512 bits
)

func newBloom(capacity int) *bloom {
	// About one bit per 4 bytes of memtable: ~25 bits per 100-byte entry,
	// leaving room for the entries' prefixes.
	blocks := max(capacity/256, 1024) / bloomBlockWords
	return &bloom{words: make([]uint64, blocks*bloomBlockWords), blocks: uint64(blocks), seed: maphash.MakeSeed()}
}

// locate hashes key to its block (from the hash's top 28 bits) and its
// probes (the low 36 bits, 9 a probe).
func (b *bloom) locate(key []byte) (block []uint64, probes uint64) {
	h := maphash.Bytes(b.seed, key)
	i := (h >> 36) * b.blocks >> 28
	return b.words[i*bloomBlockWords : (i+1)*bloomBlockWords : (i+1)*bloomBlockWords], h
}

func (b *bloom) add(key []byte) {
	block, h := b.locate(key)
	for i := 0; i < bloomProbes; i++ {
		bit := h & 511
		w, m := &block[bit/64], uint64(1)<<(bit%64)
		if atomic.LoadUint64(w)&m == 0 {
			atomic.OrUint64(w, m)
		}
		h >>= 9
	}
}

func (b *bloom) mayContain(key []byte) bool {
	block, h := b.locate(key)
	for i := 0; i < bloomProbes; i++ {
		bit := h & 511
		if atomic.LoadUint64(&block[bit/64])&(uint64(1)<<(bit%64)) == 0 {
			return false
		}
		h >>= 9
	}
	return true
}
