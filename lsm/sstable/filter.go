package sstable

import (
	"encoding/binary"
	"math"

	"github.com/bits-and-blooms/bloom/v3"

	"github.com/seed84792017/cellcast/lsm/internal/base"
)

// encodeFilter builds a bloom filter over keys with bitsPerKey bits each and
// serializes it as m, k (uint64 each) then the bit words.
func encodeFilter(keys [][]byte, bitsPerKey int) []byte {
	n := max(len(keys), 1)
	m := uint(n * bitsPerKey)
	if m < 64 {
		m = 64
	}
	k := uint(math.Round(float64(bitsPerKey) * math.Ln2))
	k = max(1, min(k, 30))
	f := bloom.New(m, k)
	for _, key := range keys {
		f.Add(key)
	}
	words := f.BitSet().Words()
	out := make([]byte, 0, 16+8*len(words))
	out = binary.LittleEndian.AppendUint64(out, uint64(f.Cap()))
	out = binary.LittleEndian.AppendUint64(out, uint64(f.K()))
	for _, w := range words {
		out = binary.LittleEndian.AppendUint64(out, w)
	}
	return out
}

func decodeFilter(raw []byte, file string, off int64) (*bloom.BloomFilter, error) {
	if len(raw) < 16 || (len(raw)-16)%8 != 0 {
		return nil, base.Corruptf(file, off, "filter block of %d bytes", len(raw))
	}
	m := binary.LittleEndian.Uint64(raw)
	k := binary.LittleEndian.Uint64(raw[8:])
	words := make([]uint64, (len(raw)-16)/8)
	if m == 0 || k == 0 || k > 30 || m > uint64(64*len(words)) {
		return nil, base.Corruptf(file, off, "filter with m=%d k=%d over %d words", m, k, len(words))
	}
	for i := range words {
		words[i] = binary.LittleEndian.Uint64(raw[16+8*i:])
	}
	return bloom.FromWithM(words, uint(m), uint(k)), nil
}
