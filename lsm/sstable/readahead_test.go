package sstable

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/seed84792017/cellcast/lsm/internal/base"
	"github.com/seed84792017/cellcast/lsm/vfs"
)

// countingFile counts the reads a table makes of its file.
type countingFile struct {
	vfs.File
	reads int
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	f.reads++
	return f.File.ReadAt(p, off)
}

// TestScansReadAheadSeeksDoNot: a full scan, cached or not, returns every
// entry in order with far fewer reads than blocks; seeks that each read a
// block or two start no window (one read a block).
func TestScansReadAheadSeeksDoNot(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	ents := randEntries(rng, 20000)
	for _, comp := range []Compression{Snappy, NoCompression} {
		fs := vfs.NewMem()
		meta := writeTable(t, fs, "/t.sst", ents, WriterOptions{Compression: comp, BlockSize: 1 << 10})
		open := func(cache *Cache) (*Reader, *countingFile) {
			f, err := fs.Open("/t.sst")
			if err != nil {
				t.Fatal(err)
			}
			cf := &countingFile{File: f}
			r, err := Open(cf, "/t.sst", int64(meta.Size), ReaderOptions{Cache: cache, CacheID: 1, FileNum: 1})
			if err != nil {
				t.Fatal(err)
			}
			cf.reads = 0
			return r, cf
		}
		for _, mode := range []string{"cached", "compaction"} {
			r, cf := open(NewCache(64 << 10))
			it := r.NewIter(nil)
			if mode == "compaction" {
				it = &Iter{}
				r.InitCompactionIter(it)
			}
			i := 0
			for it.First(); it.Valid(); it.Next() {
				if base.Compare(it.Key(), ents[i].k) != 0 || !bytes.Equal(it.Value(), ents[i].v) {
					t.Fatalf("%v %s: entry %d is %s, want %s", comp, mode, i, it.Key(), ents[i].k)
				}
				i++
			}
			if it.Error() != nil || i != len(ents) {
				t.Fatalf("%v %s: %d of %d entries, %v", comp, mode, i, len(ents), it.Error())
			}
			if blocks := r.NumBlocks(); cf.reads*8 > blocks {
				t.Errorf("%v %s: %d reads for %d blocks", comp, mode, cf.reads, blocks)
			}
			r.Close()
		}

		r, cf := open(nil)
		it := r.NewIter(nil)
		const seeks = 200
		for range seeks {
			e := ents[rng.Intn(len(ents))]
			it.SeekGE(e.k.UserKey)
			if !it.Valid() || !bytes.Equal(it.Key().UserKey, e.k.UserKey) {
				t.Fatalf("%v: seek to %q landed on %v", comp, e.k.UserKey, it.Key())
			}
			it.Next()
		}
		if cf.reads > seeks*2 {
			t.Errorf("%v: %d reads for %d seeks", comp, cf.reads, seeks)
		}
		if got := r.stats.BytesFromDisk.Load(); got > int64(seeks*2*(2<<10)) {
			t.Errorf("%v: seeks read %d bytes, more than two blocks each", comp, got)
		}
		r.Close()
	}
}
