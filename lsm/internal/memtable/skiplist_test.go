package memtable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seed84792017/cellcast/lsm/internal/base"
)

type entry struct {
	key   base.InternalKey
	value string
}

// The iterator yields exactly the added entries in internal-key order, with
// merges of the same key chained in place.
func TestIterMatchesSortedModel(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	m := New(1 << 20)
	var model []entry
	for seq := uint64(1); seq <= 5000; seq++ {
		model = addRandomKind(t, rng, m, model, seq, []byte(fmt.Sprintf("k%03d", rng.Intn(300))))
	}
	checkModel(t, m, model, rng)
}

// addRandomKind adds key to m at seq as a set, a delete or a merge, and
// to the model.
func addRandomKind(t *testing.T, rng *rand.Rand, m *Memtable, model []entry, seq uint64, key []byte) []entry {
	t.Helper()
	kind := base.Kind(rng.Intn(3))
	v := fmt.Sprintf("v%d", seq)
	if kind == base.KindDelete {
		v = ""
	}
	if err := m.Add(seq, kind, key, []byte(v)); err != nil {
		t.Fatal(err)
	}
	return append(model, entry{base.MakeKey(key, seq, kind), v})
}

// checkModel checks that m holds exactly model's entries, in internal-key
// order, and that SeekGE finds the first entry of any key at or after a
// target.
func checkModel(t *testing.T, m *Memtable, model []entry, rng *rand.Rand) {
	t.Helper()
	sort.Slice(model, func(i, j int) bool { return base.Compare(model[i].key, model[j].key) < 0 })
	it := m.NewIter()
	i := 0
	for it.First(); it.Valid(); it.Next() {
		if i >= len(model) || base.Compare(it.Key(), model[i].key) != 0 || string(it.Value()) != model[i].value {
			t.Fatalf("entry %d: got %s=%q", i, it.Key(), it.Value())
		}
		i++
	}
	if i != len(model) || m.Len() != int64(len(model)) {
		t.Fatalf("iterated %d, Len %d, want %d", i, m.Len(), len(model))
	}
	// Every level is a sorted list, or searches skip past entries.
	for lvl := 0; lvl < int(m.height.Load()); lvl++ {
		for x := m.next(m.head, lvl); x != 0; x = m.next(x, lvl) {
			y := m.next(x, lvl)
			if y == 0 {
				break
			}
			if c := bytes.Compare(m.key(x), m.key(y)); c > 0 || (c == 0 && *m.a.u64(x + nodeSeq) < *m.a.u64(y + nodeSeq)) {
				t.Fatalf("level %d: %q#%d before %q#%d", lvl, m.key(x), *m.a.u64(x + nodeSeq), m.key(y), *m.a.u64(y + nodeSeq))
			}
		}
	}
	for trial := 0; trial < 500; trial++ {
		target := model[rng.Intn(len(model))].key.UserKey
		if rng.Intn(2) == 0 {
			target = append(slices.Clone(target), byte(rng.Intn(256)))
		}
		j := sort.Search(len(model), func(j int) bool { return bytes.Compare(model[j].key.UserKey, target) >= 0 })
		it.SeekGE(target)
		if j == len(model) {
			if it.Valid() {
				t.Fatalf("seek %q: want end, got %s", target, it.Key())
			}
			continue
		}
		if !it.Valid() || base.Compare(it.Key(), model[j].key) != 0 {
			t.Fatalf("seek %q: want %s", target, model[j].key)
		}
	}
}

// Keys added in runs, ascending, descending, repeated or at random, as a
// search that starts at the newest node (findGEAfterHint) and one that
// starts at the head take turns: the memtable holds exactly what was
// added, in order.
func TestRunsMatchSortedModel(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewSource(seed))
		m := New(4 << 20)
		var model []entry
		k := uint64(rng.Intn(1000))
		mode := 0
		for seq := uint64(1); seq <= 8000; seq++ {
			if rng.Intn(50) == 0 {
				mode = rng.Intn(4)
			}
			switch mode {
			case 0: // ascending, with gaps a later run may fill
				k += 1 + uint64(rng.Intn(3))*uint64(rng.Intn(2))*7
			case 1:
				k -= uint64(rng.Intn(5))
			case 2: // the same key, or its neighbour
				k += uint64(rng.Intn(2))
			default:
				k = uint64(rng.Intn(100000))
			}
			key := fmt.Appendf(nil, "%012d", k)
			if rng.Intn(4) == 0 { // a longer key after its prefix
				key = append(key, 'x')
			}
			model = addRandomKind(t, rng, m, model, seq, key)
		}
		checkModel(t, m, model, rng)
	}
}

func TestMergeAppendsInPlace(t *testing.T) {
	m := New(1 << 20)
	m.Add(1, base.KindMerge, []byte("c"), []byte("a"))
	m.Add(2, base.KindMerge, []byte("c"), []byte("b"))
	m.Add(3, base.KindSet, []byte("c"), []byte("base"))
	m.Add(4, base.KindMerge, []byte("c"), []byte("d"))
	m.Add(5, base.KindMerge, []byte("c"), []byte("e"))
	var got []string
	it := m.NewIter()
	for it.First(); it.Valid(); it.Next() {
		got = append(got, it.Key().String()+"="+string(it.Value()))
	}
	want := `["c"#5,MERGE=e "c"#4,MERGE=d "c"#3,SET=base "c"#2,MERGE=b "c"#1,MERGE=a]`
	if fmt.Sprint(got) != want {
		t.Fatalf("got %v\nwant %s", got, want)
	}
	// Two skiplist nodes hold the four fragments.
	nodes := 0
	for n := m.next(m.head, 0); n != 0; n = m.next(n, 0) {
		nodes++
	}
	if nodes != 3 {
		t.Fatalf("nodes = %d, want 3", nodes)
	}
}

// Readers running alongside the writer always see a sorted sequence and every
// entry whose add completed before they started.
func TestFullArenaRefusesWithoutChange(t *testing.T) {
	m := New(4 << 10)
	var added int64
	for i := 0; ; i++ {
		err := m.Add(uint64(i+1), base.KindMerge, []byte(fmt.Sprintf("k%d", i%7)), make([]byte, 100))
		if err == ErrFull {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		added++
	}
	if added < 20 || m.Len() != added {
		t.Fatalf("added %d, Len %d", added, m.Len())
	}
	n := 0
	it := m.NewIter()
	for it.First(); it.Valid(); it.Next() {
		n++
	}
	if int64(n) != added {
		t.Fatalf("iterated %d of %d", n, added)
	}
}

func TestConcurrentReaders(t *testing.T) {
	m := New(1 << 20)
	var published atomic.Uint64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				seen := published.Load()
				var prev base.InternalKey
				n := uint64(0)
				it := m.NewIter()
				for it.First(); it.Valid(); it.Next() {
					k := it.Key()
					if n > 0 && base.Compare(prev, k) >= 0 {
						t.Errorf("out of order: %s then %s", prev, k)
						return
					}
					prev = k.Clone()
					if k.Seq() <= seen {
						n++
					}
				}
				if n != seen {
					t.Errorf("saw %d of %d published entries", n, seen)
					return
				}
			}
		}()
	}
	rng := rand.New(rand.NewSource(3))
	for seq := uint64(1); seq <= 20000; seq++ {
		k := []byte(fmt.Sprintf("%05d", rng.Intn(2000)))
		m.Add(seq, base.KindMerge, k, []byte("v"))
		published.Store(seq)
	}
	close(stop)
	wg.Wait()
}

func TestFilterHasEveryKey(t *testing.T) {
	m := New(1 << 20)
	for i := 0; i < 5000; i++ {
		k := []byte(fmt.Sprintf("key%05d", i))
		m.AddFilterKey(k[:5])
		if err := m.Add(uint64(i+1), base.KindSet, k, nil); err != nil {
			t.Fatal(err)
		}
	}
	fp := 0
	for i := 0; i < 5000; i++ {
		if !m.MayContain([]byte(fmt.Sprintf("key%05d", i))) || !m.MayContain([]byte(fmt.Sprintf("key%05d", i))[:5]) {
			t.Fatalf("false negative for key %d", i)
		}
		if m.MayContain([]byte(fmt.Sprintf("absent%05d", i))) {
			fp++
		}
	}
	if fp > 100 {
		t.Fatalf("%d false positives of 5000", fp)
	}
}

// The blocked filter at its design load (about 26 bits an entry) keeps
// false positives well under 1%, with no false negative.
func TestFilterFalsePositivesAtDesignLoad(t *testing.T) {
	f := newBloom(1 << 20)
	const n = 10000
	for i := 0; i < n; i++ {
		f.add([]byte(fmt.Sprintf("in%d", i)))
	}
	fp := 0
	for i := 0; i < 100000; i++ {
		if !f.mayContain([]byte(fmt.Sprintf("in%d", i%n))) {
			t.Fatalf("false negative for in%d", i%n)
		}
		if f.mayContain([]byte(fmt.Sprintf("out%d", i))) {
			fp++
		}
	}
	if fp > 300 {
		t.Fatalf("%d false positives of 100000", fp)
	}
	t.Logf("%d false positives of 100000", fp)
}

// BenchmarkAdd adds 16-byte keys with 100-byte values to a memtable of
// 64 MiB, in order (a table keyed by sequence number) and at random.
func BenchmarkAdd(b *testing.B) {
	val := make([]byte, 100)
	for _, order := range []string{"ascending", "random"} {
		b.Run(order, func(b *testing.B) {
			rng := rand.New(rand.NewSource(1))
			m := New(64 << 20)
			key := make([]byte, 16)
			for i := 0; b.Loop(); i++ {
				k := uint64(i)
				if order == "random" {
					k = rng.Uint64()
				}
				binary.BigEndian.PutUint64(key[8:], k)
				if m.Add(uint64(i+1), base.KindSet, key, val) == ErrFull {
					b.StopTimer()
					m = New(64 << 20)
					b.StartTimer()
				}
			}
		})
	}
}
