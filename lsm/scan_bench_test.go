package lsm

import (
	"fmt"
	"testing"

	"github.com/seed84792017/cellcast/lsm/vfs"
)

// BenchmarkScan reads every key of a DB whose last level holds most keys
// under two L0 tables: readseq's shape.
func BenchmarkScan(b *testing.B) {
	db := mustOpen(b, "/db", &Options{FS: vfs.NewMem(), Logger: quietLogger, L0CompactionThreshold: 8, L0SlowdownWritesThreshold: 12})
	defer db.Close()
	val := make([]byte, 100)
	const n = 200000
	for i := range n {
		db.Set(fmt.Appendf(nil, "k%015d", (i*7919)%n), val, NoSync)
	}
	if err := db.Compact(b.Context(), nil, nil); err != nil {
		b.Fatal(err)
	}
	for f := range 2 {
		for i := f; i < n; i += 50 {
			db.Set(fmt.Appendf(nil, "k%015d", i), val, NoSync)
		}
		db.Flush()
	}
	b.ResetTimer()
	for range b.N {
		it, _ := db.NewIter(nil)
		c := 0
		for ok := it.First(); ok; ok = it.Next() {
			c++
		}
		it.Close()
		if c != n {
			b.Fatalf("scanned %d keys", c)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/key")
}
