package secondary

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/seed84792017/cellcast/lsm"
)

var strategies = []Strategy{Embedded, Eager, Lazy, Composite, DELI, BloomHierarchy}

// attrs indexes "user" and "time" once per strategy, so every strategy
// answers over the same rows.
func attrs() []Attr {
	var as []Attr
	for _, s := range strategies {
		as = append(as, Attr{Name: "user_" + string(s), Type: String, Strategy: s}, Attr{Name: "time_" + string(s), Type: Int, Strategy: s})
	}
	return as
}

func smallEngine() *lsm.Options {
	return &lsm.Options{MemTableSize: 64 << 10, TargetFileSize: 32 << 10, LBaseMaxBytes: 128 << 10, BlockSize: 1 << 10}
}

// oracle answers by scanning every live row.
type oracle map[string]Row

func (o oracle) answer(match func(Doc) bool, k int) []Row {
	var out []Row
	for _, r := range o {
		if match(r.Doc) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Row) int {
		if a.Seq > b.Seq {
			return -1
		}
		return 1
	})
	if k > 0 && len(out) > k {
		out = out[:k]
	}
	return out
}

func keys(rs []Row) string {
	s := ""
	for _, r := range rs {
		s += fmt.Sprintf("%s@%d ", r.Key, r.Seq)
	}
	return s
}

// TestDifferential runs random puts (updates change the indexed values),
// deletes, flushes, compactions and reopens, and checks every lookup of
// every strategy against a full scan: the same rows in the same order.
func TestDifferential(t *testing.T) {
	for seed := int64(1); seed <= 3; seed++ {
		t.Run(strconv.FormatInt(seed, 10), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			dir := t.TempDir()
			cfg := Config{Attrs: attrs(), Options: smallEngine()}
			tb, err := Open(dir, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { tb.Close() }()
			o := oracle{}
			users := []string{"ann", "bob", "cy", "dee", "ed", "flo", "", "g\x00h"}
			user := func() string { return users[min(rng.Intn(len(users)), rng.Intn(len(users)))] } // skewed
			for i := 0; i < 4000; i++ {
				switch x := rng.Intn(100); {
				case x < 60:
					pk := "k" + strconv.Itoa(rng.Intn(300))
					u, tm := user(), int64(rng.Intn(200)-50)
					doc := Doc{}
					if rng.Intn(10) > 0 { // some rows lack an attribute
						for _, s := range strategies {
							doc["user_"+string(s)] = StringValue(u)
						}
					}
					for _, s := range strategies {
						doc["time_"+string(s)] = IntValue(tm)
					}
					doc["note"] = StringValue("not indexed")
					if err := tb.Put(pk, doc); err != nil {
						t.Fatal(err)
					}
					r, err := tb.Get(pk)
					if err != nil || !reflect.DeepEqual(r.Doc, doc) {
						t.Fatalf("get after put: %+v %v", r, err)
					}
					o[pk] = *r
				case x < 70:
					pk := "k" + strconv.Itoa(rng.Intn(300))
					err := tb.Delete(pk)
					if _, ok := o[pk]; ok != (err == nil) || (!ok && !errors.Is(err, ErrNotFound)) {
						t.Fatalf("delete %s: %v (present %v)", pk, err, ok)
					}
					delete(o, pk)
				case x < 71 && rng.Intn(2) == 0: // those of a range, by any strategy's index
					st := strategies[rng.Intn(len(strategies))]
					tn, k := "time_"+string(st), []int{0, 1, 3, 10}[rng.Intn(4)]
					a := int64(rng.Intn(200) - 60)
					b := a + 1 + int64(rng.Intn(40))
					want := o.answer(func(d Doc) bool { v := d[tn]; return v.I >= a && v.I <= b }, k)
					n, err := tb.DeleteRange(tn, IntValue(a), IntValue(b), k)
					if err != nil || n != len(want) {
						t.Fatalf("op %d delete range %s [%d, %d] k=%d: %d, %v; want %s", i, tn, a, b, k, n, err, keys(want))
					}
					for _, r := range want {
						delete(o, r.Key)
					}
				case x < 71: // several at once, some absent, some twice
					var pks []string
					want := 0
					for range rng.Intn(20) {
						pk := "k" + strconv.Itoa(rng.Intn(300))
						if _, ok := o[pk]; ok {
							want++
							delete(o, pk)
						}
						pks = append(pks, pk)
						if rng.Intn(4) == 0 {
							pks = append(pks, pk)
						}
					}
					if n, err := tb.DeleteMany(pks); err != nil || n != want {
						t.Fatalf("delete many %v: %d, %v; want %d", pks, n, err, want)
					}
				case x < 72:
					if err := tb.Flush(); err != nil {
						t.Fatal(err)
					}
				case x < 73:
					if err := tb.Compact(context.Background()); err != nil {
						t.Fatal(err)
					}
				case x < 74:
					if err := tb.Close(); err != nil {
						t.Fatal(err)
					}
					if tb, err = Open(dir, cfg); err != nil {
						t.Fatal(err)
					}
				default:
					k := []int{0, 1, 3, 10}[rng.Intn(4)]
					u := user()
					a := int64(rng.Intn(200) - 60)
					b := a + 1 + int64(rng.Intn(40))
					for _, s := range strategies {
						un, tn := "user_"+string(s), "time_"+string(s)
						got, err := tb.Lookup(un, StringValue(u), k)
						want := o.answer(func(d Doc) bool { v, ok := d[un]; return ok && v.S == u }, k)
						if err != nil || keys(got) != keys(want) {
							t.Fatalf("op %d %s lookup %q k=%d:\n got  %s (%v)\n want %s", i, s, u, k, keys(got), err, keys(want))
						}
						got, err = tb.RangeLookup(tn, IntValue(a), IntValue(b), k)
						want = o.answer(func(d Doc) bool { v := d[tn]; return v.I >= a && v.I <= b }, k)
						if err != nil || keys(got) != keys(want) {
							t.Fatalf("op %d %s range [%d, %d] k=%d:\n got  %s (%v)\n want %s", i, s, a, b, k, keys(got), err, keys(want))
						}
						lo, hi := user(), user()
						if lo < hi {
							got, err = tb.RangeLookup(un, StringValue(lo), StringValue(hi), k)
							want = o.answer(func(d Doc) bool { v, ok := d[un]; return ok && v.S >= lo && v.S <= hi }, k)
							if err != nil || keys(got) != keys(want) {
								t.Fatalf("op %d %s range [%q, %q] k=%d:\n got  %s (%v)\n want %s", i, s, lo, hi, k, keys(got), err, keys(want))
							}
						}
					}
				}
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	tb, err := Open(t.TempDir(), Config{Attrs: attrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	if err := tb.Put("a", Doc{"user_lazy": IntValue(3)}); !errors.Is(err, ErrType) {
		t.Errorf("a wrong type stored: %v", err)
	}
	if _, err := tb.Get("a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the refused row is there: %v", err)
	}
	for _, c := range []struct {
		err  error
		want error
	}{
		{tb.Put("", Doc{}), ErrBadKey},
		{tb.Delete("nope"), ErrNotFound},
		{func() error { _, err := tb.Lookup("color", StringValue("red"), 0); return err }(), ErrUnknownAttr},
		{func() error { _, err := tb.Lookup("user_eager", IntValue(1), 0); return err }(), ErrType},
		{func() error { _, err := tb.Lookup("user_eager", StringValue("x"), -1); return err }(), ErrBadK},
		{func() error { _, err := tb.RangeLookup("time_composite", IntValue(5), IntValue(5), 0); return err }(), ErrBadRange},
		{func() error { _, err := tb.RangeLookup("time_composite", IntValue(9), IntValue(5), 0); return err }(), ErrBadRange},
		{func() error { _, err := tb.RangeLookup("time_lazy", IntValue(1), StringValue("z"), 0); return err }(), ErrType},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%v, want %v", c.err, c.want)
		}
	}
	for _, bad := range []Config{
		{Attrs: []Attr{{Name: "a", Type: Int, Strategy: "bloom"}}},
		{Attrs: []Attr{{Name: "a", Type: 'x', Strategy: Lazy}}},
		{Attrs: []Attr{{Name: "a", Type: Int, Strategy: Lazy}, {Name: "a", Type: Int, Strategy: Eager}}},
		{Attrs: []Attr{{Name: "../a", Type: Int, Strategy: Lazy}}},
	} {
		if _, err := Open(t.TempDir(), bad); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

// FuzzDecode: the on-disk decoders never panic, and what they accept
// encodes back to the same bytes.
func FuzzDecode(f *testing.F) {
	f.Add(appendDoc(nil, 7, Doc{"a": IntValue(-3)}))
	f.Add(appendPosting(appendPosting(nil, posting{9, "k1"}), posting{3, "k2"}))
	f.Add(StringValue("a\x00b").appendKey(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		if seq, doc, err := decodeDoc(b); err == nil {
			seq2, doc2, err := decodeDoc(appendDoc(nil, seq, doc))
			if err != nil || seq2 != seq || !reflect.DeepEqual(doc, doc2) {
				t.Fatalf("doc %v %v does not round-trip: %v", seq, doc, err)
			}
		}
		var ps []posting
		if decodePostings(b, func(p posting) bool { ps = append(ps, p); return true }) == nil {
			var again []byte
			for _, p := range ps {
				again = appendPosting(again, p)
			}
			var ps2 []posting
			decodePostings(again, func(p posting) bool { ps2 = append(ps2, p); return true })
			if !reflect.DeepEqual(ps, ps2) {
				t.Fatalf("postings %v read back as %v", ps, ps2)
			}
		}
		for _, ty := range []Type{Int, String} {
			if v, rest, err := decodeKey(ty, b); err == nil {
				enc := v.appendKey(nil)
				if string(enc)+string(rest) != string(b) {
					t.Fatalf("%v: key %x encodes back as %x + %x", ty, b, enc, rest)
				}
			}
		}
	})
}

// TestEmbeddedSkipsBlocks: a lookup of a time-correlated attribute reads
// a small share of the primary table's blocks (zone maps), and so does a
// point lookup of a value in few rows (bloom filters).
func TestEmbeddedSkipsBlocks(t *testing.T) {
	tb, err := Open(t.TempDir(), Config{Attrs: []Attr{{Name: "time", Type: Int, Strategy: Embedded}, {Name: "user", Type: String, Strategy: Embedded}}, Options: smallEngine()})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	for i := range 5000 {
		doc := Doc{"time": IntValue(int64(i)), "user": StringValue("u" + strconv.Itoa(i%500))}
		// Keys grow with time, as tweet ids do: compaction keeps blocks
		// narrow in time.
		if err := tb.Put(fmt.Sprintf("k%05d", i), doc); err != nil {
			t.Fatal(err)
		}
	}
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	// One level of key-ordered tables, whatever background compactions
	// had done: the lookup must still read the newest tables first.
	if err := tb.primary.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	blocks := func(f func() ([]Row, error)) ([]Row, int64) {
		m := tb.primary.Metrics()
		before := m.BlocksFromCache + m.BlocksFromDisk
		rs, err := f()
		if err != nil {
			t.Fatal(err)
		}
		m = tb.primary.Metrics()
		return rs, m.BlocksFromCache + m.BlocksFromDisk - before
	}
	_, all := blocks(func() ([]Row, error) { return tb.RangeLookup("time", IntValue(-1), IntValue(5000), 0) })
	rs, some := blocks(func() ([]Row, error) { return tb.RangeLookup("time", IntValue(4000), IntValue(4010), 0) })
	if len(rs) != 11 || some*10 > all {
		t.Fatalf("range: %d rows, %d blocks read of %d; %+v", len(rs), some, all, tb.Metrics())
	}
	t.Logf("range: %d of %d blocks", some, all)
	rs, some = blocks(func() ([]Row, error) { return tb.Lookup("user", StringValue("u7"), 3) })
	t.Logf("point: %d of %d blocks", some, all)
	// u7 is in 10 rows: a few dozen blocks at most (bloom false positives,
	// rows validated by a Get while L0 tables overlap), of the hundreds a
	// full scan reads.
	if len(rs) != 3 || rs[0].Doc["time"].I != 4507 || some*10 > all {
		t.Fatalf("point: %+v, %d blocks read of %d", rs, some, all)
	}
	// The three newest u7 rows lie in the newest tables: the older ones,
	// whose every write predates the third, are not read.
	tables, err := tb.primary.TableNums()
	if m := tb.Metrics(); err != nil || m.TablesSkipped == 0 {
		t.Fatalf("top-3 lookup over %d tables skipped none (%v)", len(tables), err)
	}
}

// TestDELIRepairs: the primary table's compaction deletes the entries of
// the row versions it drops, and a lookup deletes the stale entries it
// meets, so the index ends with one entry per live row.
func TestDELIRepairs(t *testing.T) {
	tb, err := Open(t.TempDir(), Config{Attrs: []Attr{{Name: "user", Type: String, Strategy: DELI}}, Options: smallEngine()})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	for round := range 5 {
		for i := range 200 {
			if err := tb.Put("k"+strconv.Itoa(i), Doc{"user": StringValue("u" + strconv.Itoa((i+round)%7))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 20 {
		if err := tb.Delete("k" + strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	entries := func() int {
		it, err := tb.indexes["user"].db.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		return n
	}
	// 5 versions of 200 rows made 1,000 entries; background flushes may
	// already be repairing.
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := tb.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := entries(); n != 180 || n+int(tb.repaired.Load()) != 1000 {
		t.Fatalf("after compaction %d entries (%d repaired), want 180: one per live row", n, tb.repaired.Load())
	}
	// A stale entry the compaction has not seen yet: read repair.
	if err := tb.Put("k50", Doc{"user": StringValue("fresh")}); err != nil {
		t.Fatal(err)
	}
	old := "u" + strconv.Itoa((50+4)%7)
	rs, err := tb.Lookup("user", StringValue(old), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Key == "k50" {
			t.Fatal("a stale row returned")
		}
	}
	if n := entries(); n != 180 {
		t.Fatalf("%d entries after the lookup, want 180 (k50's old entry repaired, its new one added)", n)
	}
}

// TestHierarchyProbesFewFilters: with a value in few of many tables, the
// tree rules the others out with far fewer probes than one per table.
func TestHierarchyProbesFewFilters(t *testing.T) {
	tb, err := Open(t.TempDir(), Config{Attrs: []Attr{{Name: "batch", Type: String, Strategy: BloomHierarchy}}, Options: smallEngine()})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	for i := range 80000 {
		if err := tb.Put("k"+strconv.Itoa(i), Doc{"batch": StringValue("b" + strconv.Itoa(i/200))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	st := tb.indexes["batch"].bfh
	for _, b := range []int{3, 157, 399} {
		rs, err := tb.Lookup("batch", StringValue("b"+strconv.Itoa(b)), 0)
		if err != nil || len(rs) != 200 {
			t.Fatalf("batch %d: %d rows, %v", b, len(rs), err)
		}
	}
	t.Logf("%d filters probed, %d for a flat scan", st.probes, st.flat)
	if st.flat < 3*40 || st.probes*2 > st.flat {
		t.Fatalf("%d filters probed, %d for a flat scan", st.probes, st.flat)
	}
}

// TestEmbeddedMemtableIndex: rows still in the memtable are found through
// the in-memory index, which empties as flushes put them in tables; rows
// in tables no newer table may shadow are validated without a Get.
func TestEmbeddedMemtableIndex(t *testing.T) {
	tb, err := Open(t.TempDir(), Config{Attrs: []Attr{{Name: "user", Type: String, Strategy: Embedded}}})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	put := func(from, to int) {
		for i := from; i < to; i++ {
			if err := tb.Put(fmt.Sprintf("k%05d", i), Doc{"user": StringValue("u" + strconv.Itoa(i%10))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// One full run of the memtable index: genSize writes.
	put(0, genSize)
	mem := tb.indexes["user"].mem
	if n := memSize(mem); n != genSize {
		t.Fatalf("memtable index holds %d entries, want %d", n, genSize)
	}
	count := func(to, digit int) int { return (to - digit + 9) / 10 } // i < to with i%10 == digit
	newest := (genSize-1-3)/10*10 + 3                                 // the last i < genSize with i%10 == 3
	rs, err := tb.Lookup("user", StringValue("u3"), 0)
	if err != nil || len(rs) != count(genSize, 3) || rs[0].Key != fmt.Sprintf("k%05d", newest) {
		t.Fatalf("lookup in the memtable: %d rows (first %v), %v", len(rs), rs[0].Key, err)
	}
	if m := tb.Metrics(); m.BlocksRead != 0 || m.LiteValidations != 0 {
		t.Fatalf("a lookup of memtable rows read %d blocks, %d lite validations", m.BlocksRead, m.LiteValidations)
	}
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	// Writes prune what the flush put in tables, every pruneEvery: the
	// flushed run goes, the writes since stay.
	total := genSize + pruneEvery
	put(genSize, total)
	if n := memSize(mem); n != pruneEvery {
		t.Fatalf("after a flush and %d writes the memtable index holds %d entries", pruneEvery, n)
	}
	// Update every u3 row to u4: the old versions in the table are now
	// shadowed by the memtable, and the lookup must not return them.
	for i := 3; i < total; i += 10 {
		if err := tb.Put(fmt.Sprintf("k%05d", i), Doc{"user": StringValue("u4")}); err != nil {
			t.Fatal(err)
		}
	}
	if rs, err := tb.Lookup("user", StringValue("u3"), 0); err != nil || len(rs) != 0 {
		t.Fatalf("u3 after its rows moved to u4: %d rows, %v", len(rs), err)
	}
	rs, err = tb.Lookup("user", StringValue("u5"), 0)
	if err != nil || len(rs) != count(total, 5) {
		t.Fatalf("u5: %d rows, want %d, %v", len(rs), count(total, 5), err)
	}
	if m := tb.Metrics(); m.LiteValidations < uint64(count(genSize, 5)) {
		t.Fatalf("u5's rows sit in the only table, unshadowed: %d lite validations, %d by Get", m.LiteValidations, m.GetValidations)
	}
}

// TestDeleteEmptiesIndexes: rows that come and go leave no entries behind
// in the stand-alone indexes, so a table of expiring rows stays bounded.
func TestDeleteEmptiesIndexes(t *testing.T) {
	strategies := []Strategy{Eager, Lazy, Composite, DELI}
	var attrs []Attr
	for _, s := range strategies {
		attrs = append(attrs, Attr{Name: string(s), Type: String, Strategy: s})
	}
	tb, err := Open(t.TempDir(), Config{Attrs: attrs, Options: smallEngine()})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	for round := range 4 {
		for i := range 300 {
			doc := Doc{}
			for _, s := range strategies {
				doc[string(s)] = StringValue(fmt.Sprintf("v%d", (i+round)%13))
			}
			if err := tb.Put(fmt.Sprintf("r%d-%d", round, i), doc); err != nil {
				t.Fatal(err)
			}
		}
		if round == 1 {
			if err := tb.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if round == 2 { // all at once
			var pks []string
			for i := range 300 {
				pks = append(pks, fmt.Sprintf("r%d-%d", round, i))
			}
			if n, err := tb.DeleteMany(pks); n != 300 || err != nil {
				t.Fatalf("delete many: %d, %v", n, err)
			}
			continue
		}
		if round == 3 { // all at once, found by an index
			if n, err := tb.DeleteRange(string(Composite), StringValue("v"), StringValue("w"), 0); n != 300 || err != nil {
				t.Fatalf("delete range: %d, %v", n, err)
			}
			continue
		}
		for i := range 300 {
			if err := tb.Delete(fmt.Sprintf("r%d-%d", round, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range strategies {
		it, err := tb.indexes[string(s)].db.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		it.Close()
		if n != 0 {
			t.Errorf("%s: %d index keys left after every row was deleted", s, n)
		}
	}
}

// BenchmarkPut writes rows with two indexed attributes, a skewed string
// and a time, per strategy.
func BenchmarkPut(b *testing.B) {
	for _, s := range []Strategy{Embedded, BloomHierarchy, Eager, Lazy, Composite, DELI} {
		b.Run(string(s), func(b *testing.B) {
			tb, err := Open(b.TempDir(), Config{Attrs: []Attr{{Name: "user", Type: String, Strategy: s}, {Name: "time", Type: Int, Strategy: s}}})
			if err != nil {
				b.Fatal(err)
			}
			defer tb.Close()
			b.ResetTimer()
			for i := range b.N {
				doc := Doc{"user": StringValue("u" + strconv.Itoa(i*7919%1000)), "time": IntValue(int64(i)), "body": StringValue("a body of some sixty characters, as a short post would have")}
				if err := tb.Put(fmt.Sprintf("k%09d", i), doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEmbeddedRange looks up a narrow range of a time-correlated
// attribute over 100,000 rows in tables and a memtable.
func BenchmarkEmbeddedRange(b *testing.B) {
	tb, err := Open(b.TempDir(), Config{Attrs: []Attr{{Name: "time", Type: Int, Strategy: Embedded}}})
	if err != nil {
		b.Fatal(err)
	}
	defer tb.Close()
	const n = 100_000
	for i := range n {
		if err := tb.Put(fmt.Sprintf("k%09d", i), Doc{"time": IntValue(int64(i)), "body": StringValue("a body of some sixty characters, as a short post would have")}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		lo := int64(i*7919) % (n - 10)
		if rs, err := tb.RangeLookup("time", IntValue(lo), IntValue(lo+9), 0); err != nil || len(rs) != 10 {
			b.Fatalf("%d rows, %v", len(rs), err)
		}
	}
}

// memSize is the number of entries a memtable index holds.
func memSize(m *memIndex) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, g := range m.gens {
		n += g.n
	}
	return n
}
