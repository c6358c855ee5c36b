package lsm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/seed84792017/cellcast/lsm/vfs"
)

// BenchmarkSeek is db_bench's seekrandom: SeekGE to a random key and ten
// Nexts, on a DB spread over L0 and two levels below, with a block cache
// that holds a fraction of it.
func BenchmarkSeek(b *testing.B) {
	db := mustOpen(b, "/db", &Options{FS: vfs.NewMem(), Logger: quietLogger, BlockCacheSize: 4 << 20})
	defer db.Close()
	val := make([]byte, 100)
	const n = 400000
	rng := rand.New(rand.NewPCG(1, 2))
	for range n {
		db.Set(fmt.Appendf(nil, "k%015d", rng.IntN(n)), val, NoSync)
	}
	db.Flush()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		it, _ := db.NewIter(nil)
		it.SeekGE(fmt.Appendf(nil, "k%015d", rng.IntN(n)))
		for i := 0; i < 10 && it.Valid(); i++ {
			it.Next()
		}
		it.Close()
	}
}
