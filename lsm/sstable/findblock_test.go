package sstable

import (
	"bytes"
	"math/rand"
	"sort"
	"testing"

	"github.com/seed84792017/cellcast/lsm/internal/base"
	"github.com/seed84792017/cellcast/lsm/vfs"
)

// TestFindBlockAgreesWithALinearScan: for tables whose keys share long
// prefixes, tie in their first bytes after it, or are shorter than 8
// bytes past it, findBlock names the first block whose last key is >= the
// sought key, as a scan of the index does, for keys inside, between,
// before and after the table's.
func TestFindBlockAgreesWithALinearScan(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	alphabet := []byte{0, 1, 'a', 'b', 0xff}
	randKey := func(prefix []byte) []byte {
		k := append([]byte(nil), prefix...)
		for range rng.Intn(12) {
			k = append(k, alphabet[rng.Intn(len(alphabet))])
		}
		return k
	}
	for round := range 40 {
		prefix := randKey(nil)
		if round%2 == 0 {
			prefix = append(prefix, "shared/long/prefix/"...)
		}
		seen := map[string]bool{}
		var ents []kv
		for range 300 + rng.Intn(2000) {
			uk := randKey(prefix)
			if seen[string(uk)] {
				continue
			}
			seen[string(uk)] = true
			ents = append(ents, kv{base.MakeKey(uk, 1, base.KindSet), bytes.Repeat([]byte{'v'}, rng.Intn(100))})
		}
		sort.Slice(ents, func(i, j int) bool { return base.Compare(ents[i].k, ents[j].k) < 0 })
		fs := vfs.NewMem()
		meta := writeTable(t, fs, "/t.sst", ents, WriterOptions{BlockSize: 256})
		r := openTable(t, fs, "/t.sst", meta.Size, ReaderOptions{})
		if r.NumBlocks() < 4 {
			t.Fatalf("round %d: %d blocks", round, r.NumBlocks())
		}
		for range 2000 {
			var k []byte
			switch rng.Intn(4) {
			case 0:
				k = ents[rng.Intn(len(ents))].k.UserKey
			case 1:
				k = randKey(prefix)
			case 2:
				k = randKey(prefix[:rng.Intn(len(prefix)+1)])
			default:
				k = randKey(nil)
			}
			want := 0
			for want < len(r.index) && bytes.Compare(r.index[want].lastUserKey, k) < 0 {
				want++
			}
			if got := r.findBlock(k); got != want {
				t.Fatalf("round %d, key %q: block %d, want %d (of %d)", round, k, got, want, len(r.index))
			}
		}
		r.Close()
	}
}
