package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/seed84792017/cellcast/lsm/internal/base"
	"github.com/seed84792017/cellcast/lsm/vfs"
)

type kv struct {
	k base.InternalKey
	v []byte
}

func randEntries(rng *rand.Rand, n int) []kv {
	seen := map[string]bool{}
	var out []kv
	for len(out) < n {
		uk := fmt.Sprintf("key-%06d", rng.Intn(n*3))
		seq := uint64(rng.Intn(1000000))
		id := fmt.Sprintf("%s/%d", uk, seq)
		if seen[id] {
			continue
		}
		seen[id] = true
		v := make([]byte, rng.Intn(200))
		for i := range v {
			v[i] = byte('a' + rng.Intn(4)) // compressible
		}
		out = append(out, kv{base.MakeKey([]byte(uk), seq, base.Kind(rng.Intn(3))), v})
	}
	sort.Slice(out, func(i, j int) bool { return base.Compare(out[i].k, out[j].k) < 0 })
	return out
}

// minMaxCollector records the min and max of the first value byte per block.
type minMaxCollector struct{ bmin, bmax, tmin, tmax byte }

func newMinMax() *minMaxCollector { return &minMaxCollector{bmin: 255, tmin: 255} }

func (c *minMaxCollector) Name() string { return "minmax" }
func (c *minMaxCollector) Add(_ base.InternalKey, v []byte) error {
	if len(v) == 0 {
		return nil
	}
	c.bmin, c.bmax = min(c.bmin, v[0]), max(c.bmax, v[0])
	c.tmin, c.tmax = min(c.tmin, v[0]), max(c.tmax, v[0])
	return nil
}
func (c *minMaxCollector) FinishDataBlock() ([]byte, error) {
	out := []byte{c.bmin, c.bmax}
	c.bmin, c.bmax = 255, 0
	return out, nil
}
func (c *minMaxCollector) FinishTable() ([]byte, error) { return []byte{c.tmin, c.tmax}, nil }

type wantByte byte

func (wantByte) Name() string { return "minmax" }
func (w wantByte) Intersects(p []byte) (bool, error) {
	if len(p) != 2 {
		return false, errors.New("bad prop")
	}
	return p[0] <= byte(w) && byte(w) <= p[1], nil
}

func writeTable(t testing.TB, fs vfs.FS, name string, ents []kv, opts WriterOptions) Meta {
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(f, opts)
	for _, e := range ents {
		if err := w.Add(e.k, e.v); err != nil {
			t.Fatal(err)
		}
	}
	m, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	return m
}

func openTable(t testing.TB, fs vfs.FS, name string, size uint64, opts ReaderOptions) *Reader {
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(f, name, int64(size), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestWriteReadRoundTrip(t *testing.T) {
	for _, comp := range []Compression{Snappy, NoCompression} {
		rng := rand.New(rand.NewSource(1))
		ents := randEntries(rng, 5000)
		fs := vfs.NewMem()
		meta := writeTable(t, fs, "/t.sst", ents, WriterOptions{Compression: comp, Collectors: []BlockPropertyCollector{newMinMax()}})
		if meta.Props.NumEntries != 5000 || base.Compare(meta.Smallest, ents[0].k) != 0 || base.Compare(meta.Largest, ents[len(ents)-1].k) != 0 {
			t.Fatalf("meta %+v", meta)
		}
		r := openTable(t, fs, "/t.sst", meta.Size, ReaderOptions{Cache: NewCache(1 << 20), CacheID: 1, FileNum: 1})
		if r.Properties().NumEntries != 5000 || r.NumBlocks() < 10 {
			t.Fatalf("props %v blocks %d", r.Properties(), r.NumBlocks())
		}
		it := r.NewIter(nil)
		i := 0
		for it.First(); it.Valid(); it.Next() {
			if base.Compare(it.Key(), ents[i].k) != 0 || !bytes.Equal(it.Value(), ents[i].v) {
				t.Fatalf("entry %d: %s vs %s", i, it.Key(), ents[i].k)
			}
			i++
		}
		if it.Error() != nil || i != len(ents) {
			t.Fatalf("iterated %d, err %v", i, it.Error())
		}
		for trial := 0; trial < 1000; trial++ {
			target := []byte(fmt.Sprintf("key-%06d", rng.Intn(16000)))
			j := sort.Search(len(ents), func(j int) bool { return bytes.Compare(ents[j].k.UserKey, target) >= 0 })
			it.SeekGE(target)
			if j == len(ents) {
				if it.Valid() {
					t.Fatalf("seek past end found %s", it.Key())
				}
				continue
			}
			if !it.Valid() || base.Compare(it.Key(), ents[j].k) != 0 {
				t.Fatalf("seek %s: want %s", target, ents[j].k)
			}
		}
		// Every present key passes the filter; most absent ones do not.
		for _, e := range ents {
			if !r.MayContain(e.k.UserKey) {
				t.Fatalf("filter false negative for %s", e.k)
			}
		}
		fp := 0
		for i := 0; i < 10000; i++ {
			if r.MayContain([]byte(fmt.Sprintf("absent-%d", i))) {
				fp++
			}
		}
		if fp > 300 {
			t.Fatalf("false positive rate %d/10000 with 10 bits per key", fp)
		}
		r.Close()
	}
}

func TestBlockPropertiesSkipBlocks(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	ents := randEntries(rng, 3000)
	// Values grow with the key so blocks have narrow, distinct ranges.
	for i := range ents {
		ents[i].v = []byte{byte(i * 250 / len(ents)), 'x'}
	}
	fs := vfs.NewMem()
	meta := writeTable(t, fs, "/t.sst", ents, WriterOptions{Collectors: []BlockPropertyCollector{newMinMax()}})
	stats := &ReadStats{}
	r := openTable(t, fs, "/t.sst", meta.Size, ReaderOptions{Stats: stats})
	if p, ok := r.TableProperty("minmax"); !ok || p[0] != 0 || p[1] != 249 {
		t.Fatalf("table prop %v", p)
	}
	if in, _ := r.TableIntersects([]BlockPropertyFilter{wantByte(252)}); in {
		t.Fatal("table should not intersect 252")
	}
	it := r.NewIter([]BlockPropertyFilter{wantByte(100)})
	n := 0
	for it.First(); it.Valid(); it.Next() {
		if d := int(it.Value()[0]) - 100; d < -20 || d > 20 {
			// A block holds ~15 consecutive values; anything farther is a bug.
			t.Fatalf("got value %d from a block that should be skipped", it.Value()[0])
		}
		if it.Value()[0] == 100 {
			n++
		}
	}
	want := 0
	for _, e := range ents {
		if e.v[0] == 100 {
			want++
		}
	}
	if n != want || it.Error() != nil {
		t.Fatalf("found %d of %d entries with 100 (err %v)", n, want, it.Error())
	}
	if got := stats.BlocksFromDisk.Load(); got >= int64(r.NumBlocks()/4) {
		t.Fatalf("read %d of %d blocks; filter did not skip", got, r.NumBlocks())
	}
}

func TestCorruptBlockNamesFileAndOffset(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	ents := randEntries(rng, 3000)
	fs := vfs.NewMem()
	meta := writeTable(t, fs, "/t.sst", ents, WriterOptions{})
	f, _ := fs.Open("/t.sst")
	data, _ := io.ReadAll(f)
	f.Close()
	r := openTable(t, fs, "/t.sst", meta.Size, ReaderOptions{})
	// Damage the third data block.
	h := r.index[2].h
	data[h.off+3] ^= 0x40
	g, _ := fs.Create("/bad.sst")
	g.Write(data)
	g.Close()
	bad := openTable(t, fs, "/bad.sst", meta.Size, ReaderOptions{})
	it := bad.NewIter(nil)
	n := 0
	for it.First(); it.Valid(); it.Next() {
		n++
	}
	var ce *base.CorruptionError
	if !errors.As(it.Error(), &ce) || ce.File != "/bad.sst" || ce.Offset != int64(h.off) {
		t.Fatalf("error %v, want corruption in /bad.sst at %d", it.Error(), h.off)
	}
	// Keys in other blocks are still served.
	it.SeekGE(userKeyOf(bad.index[5].lastKey))
	if !it.Valid() || it.Error() != nil {
		t.Fatalf("block 5 unreadable: %v", it.Error())
	}
	// A damaged footer is refused at open.
	data[len(data)-20] ^= 1
	g, _ = fs.Create("/bad2.sst")
	g.Write(data)
	g.Close()
	f2, _ := fs.Open("/bad2.sst")
	if _, err := Open(f2, "/bad2.sst", int64(len(data)), ReaderOptions{}); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("open with bad footer: %v", err)
	}
}

func TestCacheEvictsLRU(t *testing.T) {
	c := NewCache(16 * 100)
	for i := uint64(0); i < 1000; i++ {
		c.Set(1, i, 0, make([]byte, 10))
	}
	if c.Size() > 16*100 {
		t.Fatalf("size %d over capacity", c.Size())
	}
	c.Set(1, 5000, 0, []byte("hot"))
	for i := uint64(0); i < 50; i++ {
		if c.Get(1, 5000, 0) == nil {
			t.Fatal("recently used entry evicted")
		}
		c.Set(1, 6000+i, 0, make([]byte, 10))
	}
	c.EvictFile(1, 5000)
	if c.Get(1, 5000, 0) != nil {
		t.Fatal("EvictFile left the block")
	}
}

// TestCacheAgreesWithAMap runs random Sets, Gets and file evictions on a
// small cache (so that it evicts, and recycles evicted entries, all the
// time) against a map of what was last set: a block the cache returns is
// always the one last set under its key, and the cache's size is the sum
// of what it still returns.
func TestCacheAgreesWithAMap(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	c := NewCache(16 * 64)
	type key struct{ file, off uint64 }
	last := map[key][]byte{}
	for i := range 20000 {
		k := key{uint64(rng.Intn(8)), uint64(rng.Intn(16))}
		switch r := rng.Intn(10); {
		case r < 5:
			v := fmt.Appendf(nil, "%d/%d#%d%s", k.file, k.off, i, strings.Repeat("x", rng.Intn(40)))
			c.Set(1, k.file, k.off, v)
			last[k] = v
		case r < 9:
			if got := c.Get(1, k.file, k.off); got != nil && !bytes.Equal(got, last[k]) {
				t.Fatalf("op %d: %v holds %q, last set %q", i, k, got, last[k])
			}
		default:
			c.EvictFile(1, k.file)
			for kk := range last {
				if kk.file == k.file {
					delete(last, kk)
				}
			}
		}
	}
	var want int64
	for k, v := range last {
		if got := c.Get(1, k.file, k.off); got != nil {
			if !bytes.Equal(got, v) {
				t.Fatalf("%v holds %q, last set %q", k, got, v)
			}
			want += int64(len(got))
		}
	}
	if c.Size() != want || want > 16*64 {
		t.Fatalf("size %d, the blocks it returns sum to %d (capacity %d)", c.Size(), want, 16*64)
	}
}

// Readers that miss the same block at once both Set it while others Get it;
// under -race this catches a value read outside the shard lock.
func TestCacheConcurrentSameKey(t *testing.T) {
	c := NewCache(1 << 20)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				if v := c.Get(1, 1, 0); v != nil && len(v) != 8 {
					t.Errorf("got a %d-byte block, want 8", len(v))
					return
				}
				c.Set(1, 1, 0, make([]byte, 8))
			}
		}()
	}
	wg.Wait()
}

func TestWriterRejectsUnorderedKeys(t *testing.T) {
	w := NewWriter(io.Discard, WriterOptions{})
	if err := w.Add(base.MakeKey([]byte("b"), 1, base.KindSet), nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(base.MakeKey([]byte("a"), 1, base.KindSet), nil); err == nil {
		t.Fatal("out-of-order key accepted")
	}
}

func FuzzBlock(f *testing.F) {
	var w blockWriter
	for i := 0; i < 40; i++ {
		w.add(base.MakeKey([]byte(fmt.Sprintf("k%03d", i)), uint64(i), base.KindSet).Encode(nil), []byte("v"))
	}
	f.Add(append([]byte(nil), w.finish()...), []byte("k010"))
	f.Add([]byte{0, 0, 0, 0}, []byte("a"))
	f.Fuzz(func(t *testing.T, data, target []byte) {
		var it blockIter
		if it.init(data, "fuzz", 0) != nil {
			return
		}
		n := 0
		for it.first(); it.valid && n < 10000; it.nextEntry() {
			n++
		}
		it.seekGE(target)
		if it.err != nil && !errors.Is(it.err, base.ErrCorruption) {
			t.Fatal(it.err)
		}
	})
}

func FuzzTable(f *testing.F) {
	rng := rand.New(rand.NewSource(4))
	fs := vfs.NewMem()
	meta := writeTable(f, fs, "/s.sst", randEntries(rng, 200), WriterOptions{Collectors: []BlockPropertyCollector{newMinMax()}})
	file, _ := fs.Open("/s.sst")
	seed, _ := io.ReadAll(file)
	if uint64(len(seed)) != meta.Size {
		f.Fatalf("seed of %d bytes, meta says %d", len(seed), meta.Size)
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		mfs := vfs.NewMem()
		g, _ := mfs.Create("/f.sst")
		g.Write(data)
		g.Close()
		h, _ := mfs.Open("/f.sst")
		r, err := Open(h, "/f.sst", int64(len(data)), ReaderOptions{})
		if err != nil {
			if !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("open error not a corruption: %v", err)
			}
			return
		}
		it := r.NewIter([]BlockPropertyFilter{wantByte(3)})
		for it.First(); it.Valid(); it.Next() {
		}
		if it.Error() != nil && !errors.Is(it.Error(), base.ErrCorruption) {
			t.Fatal(it.Error())
		}
		it.SeekGE([]byte("key-000100"))
		r.MayContain([]byte("x"))
	})
}

func hashAll(keys [][]byte) []uint64 {
	hs := make([]uint64, len(keys))
	for i, k := range keys {
		hs[i] = hash64(k)
	}
	return hs
}

// The blocked filter has no false negatives and stays near its expected
// false-positive rate at every size; damaged filter blocks are refused.
func TestBlockedFilter(t *testing.T) {
	for _, n := range []int{1, 7, 1000, 100000} {
		keys := make([][]byte, n)
		for i := range keys {
			keys[i] = []byte(fmt.Sprintf("cell/%d/%d", i%97, i))
		}
		raw := encodeFilter(hashAll(keys), 10)
		f, err := decodeFilter(raw, "t", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if !f.mayContain(k) {
				t.Fatalf("n=%d: false negative for %s", n, k)
			}
		}
		fp := 0
		const probes = 100000
		for i := 0; i < probes; i++ {
			if f.mayContain([]byte(fmt.Sprintf("absent/%d", i))) {
				fp++
			}
		}
		// Expected ~1.2% at 10 bits per key; tiny filters round up to a
		// whole block and do better.
		if rate := float64(fp) / probes; rate > 0.02 {
			t.Errorf("n=%d: false positive rate %.4f", n, rate)
		}
	}
	good := encodeFilter(hashAll([][]byte{[]byte("a")}), 10)
	for name, raw := range map[string][]byte{
		"short":        good[:4],
		"zero probes":  append([]byte{0, 0, 0, 0}, good[4:]...),
		"truncated":    good[:len(good)-8],
		"extra blocks": append(append([]byte(nil), good[:4]...), append([]byte{2, 0, 0, 0}, good[8:]...)...),
	} {
		if _, err := decodeFilter(raw, "t", 0); err == nil {
			t.Errorf("%s filter accepted", name)
		}
	}
}

// Every filter prefix of every key is in the table's filter, however the
// writer skips those its neighbours already named: keys of random paths
// whose prefixes are their ancestors, named shallowest first, each key in
// one of two lists (a trailing flag) as DualDB's are. And it does skip
// them: the filter holds each ancestor a few times, not once per key.
func TestFilterPrefixesAllPresent(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	seen := map[string]bool{}
	var ents []kv
	for len(ents) < 4000 {
		k := []byte{'c'}
		for d := 1 + rng.Intn(12); d > 0; d-- {
			k = append(k, byte('a'+rng.Intn(3)))
		}
		k = append(k, "sp"[rng.Intn(2)])
		if seen[string(k)] {
			continue
		}
		seen[string(k)] = true
		ents = append(ents, kv{base.MakeKey(k, 1, base.KindSet), []byte("v")})
	}
	sort.Slice(ents, func(i, j int) bool { return base.Compare(ents[i].k, ents[j].k) < 0 })
	prefixes := func(k []byte, add func([]byte)) {
		add(k[:len(k)-1])
		for e := 2; e < len(k)-1; e++ {
			add(append(append([]byte(nil), k[:e]...), '|'))
			add(append(append([]byte(nil), k[:e]...), '|', k[len(k)-1]))
		}
	}
	fs := vfs.NewMem()
	f, err := fs.Create("/t.sst")
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(f, WriterOptions{FilterPrefixes: prefixes})
	for _, e := range ents {
		if err := w.Add(e.k, e.v); err != nil {
			t.Fatal(err)
		}
	}
	entries := len(*w.filterHashes)
	meta, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	r := openTable(t, fs, "/t.sst", meta.Size, ReaderOptions{})
	defer r.Close()
	named, distinct := 0, map[string]bool{}
	for _, e := range ents {
		prefixes(e.k.UserKey, func(p []byte) {
			named++
			distinct[string(p)] = true
			if !r.MayContain(p) {
				t.Fatalf("the filter lacks %q, a prefix of %q", p, e.k.UserKey)
			}
		})
	}
	if added := entries - len(ents); added > 2*len(distinct) {
		t.Fatalf("%d prefixes added for %d distinct ones (%d named)", added, len(distinct), named)
	}
}

// A table's filter hashes come from a pool: a writer takes the slice the
// writer before it gave back, and must write the same bytes for the same
// entries, not a filter that still holds the keys of the table before.
func TestFilterHashesPooledEmpty(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	write := func(ents []kv) []byte {
		var buf bytes.Buffer
		w := NewWriter(&buf, WriterOptions{})
		for _, e := range ents {
			if err := w.Add(e.k, e.v); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	a, b := randEntries(rng, 2000), randEntries(rng, 500)
	first := write(a)
	write(b)
	if again := write(a); !bytes.Equal(first, again) {
		t.Fatalf("the same entries wrote a different table after another table (%d bytes, then %d)", len(first), len(again))
	}
}
