package sstable

import (
	"encoding/binary"
	"io"
	"testing"

	"github.com/seed84792017/cellcast/lsm/internal/base"
)

// BenchmarkWriter writes tables of 100,000 distinct keys of 16 bytes with
// 100-byte values, as a flush or a compaction does, with and without a
// filter prefix per key, to a writer that keeps nothing.
func BenchmarkWriter(b *testing.B) {
	const n = 100_000
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = binary.BigEndian.AppendUint64([]byte("cell/key"), uint64(i)*7919)
	}
	value := make([]byte, 100)
	for _, tc := range []struct {
		name     string
		prefixes func([]byte, func([]byte))
	}{
		{"keys", nil},
		{"prefixes", func(k []byte, add func([]byte)) { add(k[:len(k)-2]) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				w := NewWriter(io.Discard, WriterOptions{FilterPrefixes: tc.prefixes})
				for j, k := range keys {
					if err := w.Add(base.MakeKey(k, uint64(j+1), base.KindSet), value); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
