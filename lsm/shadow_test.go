package lsm

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/seed84792017/cellcast/lsm/vfs"
)

// TestSkipMemtablesAndShadowed checks, against a model, what an index over
// the memtables needs from a tables-only iterator: it holds every write
// numbered below FlushedSeq and none from on, and MayBeShadowed never
// misses a newer version hidden in a skipped memtable, block or table.
func TestSkipMemtablesAndShadowed(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { checkShadowed(t, seed) })
	}
}

func checkShadowed(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	opts := smallOptions(vfs.NewMem())
	opts.BlockPropertyCollectors = []func() BlockPropertyCollector{newZoneMap}
	opts.BlockSize = 64 // a few entries a block, so filters skip many
	// Half the seeds let compactions zero last-level sequence numbers:
	// shadowing must be judged the same, and SeqNum is exact or 0.
	opts.KeepSeqNums = seed%2 == 0
	db := mustOpen(t, "/db", opts)
	defer func() { db.Close() }()

	type write struct {
		value []byte // nil: deleted
		seq   uint64
	}
	model := map[string]write{}
	var certain, hidden int // entries judged current; stale entries seen
	var zeroed int          // current entries whose sequence number a compaction zeroed
	for step := range 6000 {
		k := fmt.Sprintf("k%03d", rng.IntN(300))
		b := NewBatch()
		var v []byte
		if rng.IntN(6) == 0 {
			b.Delete([]byte(k))
		} else {
			// The zone number first, then the step, so every value differs.
			v = binary.BigEndian.AppendUint64(nil, uint64(rng.IntN(1000)))
			v = fmt.Appendf(v, "/%d", step)
			b.Set([]byte(k), v)
		}
		if err := db.Apply(b, nil); err != nil {
			t.Fatal(err)
		}
		model[k] = write{v, b.SeqNum()}
		switch r := rng.IntN(1000); {
		case r < 4:
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		case r < 5:
			if err := db.Compact(context.Background(), nil, nil); err != nil {
				t.Fatal(err)
			}
		case r < 6:
			db.Close()
			db = mustOpen(t, "/db", opts)
		}
		if step%500 != 499 {
			continue
		}
		floor := uint64(rng.IntN(1000))
		it, err := db.NewIter(&IterOptions{SkipMemtables: true, Filters: []BlockPropertyFilter{atLeast(floor)}})
		if err != nil {
			t.Fatal(err)
		}
		flushed := it.FlushedSeq()
		if dbFlushed, err := db.FlushedSeq(); err != nil || dbFlushed < flushed {
			t.Fatalf("DB.FlushedSeq %d, %v; the iterator's %d", dbFlushed, err, flushed)
		}
		seen := map[string]bool{}
		for ok := it.First(); ok; ok = it.Next() {
			key := string(it.Key())
			seen[key] = true
			shadowed, err := it.MayBeShadowed()
			if err != nil {
				t.Fatal(err)
			}
			w := model[key]
			current := w.seq < flushed && string(w.value) == string(it.Value())
			if !current && !shadowed {
				t.Fatalf("step %d: %s=%q read as current; the model has %q (seq %d, flushed below %d)", step, key, it.Value(), w.value, w.seq, flushed)
			}
			if current && !shadowed {
				certain++
			}
			if !current {
				hidden++
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		// Every live key last written below FlushedSeq whose number passes
		// the filter is in the tables.
		for k, w := range model {
			if w.value != nil && w.seq < flushed && binary.BigEndian.Uint64(w.value) >= floor && !seen[k] {
				t.Fatalf("step %d: %s (seq %d < %d) missing from the tables", step, k, w.seq, flushed)
			}
		}
		// A TableScan reads the same tables one at a time: what it judges
		// current is, with the right sequence number, and every live key
		// shows up in its newest table.
		scan, err := db.NewTableScan()
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]bool{}
		for i := range scan.Tables() {
			it, err := scan.NewIter(i, &IterOptions{Filters: []BlockPropertyFilter{atLeast(floor)}})
			if err != nil {
				t.Fatal(err)
			}
			for ok := it.First(); ok; ok = it.Next() {
				key := string(it.Key())
				w := model[key]
				shadowed, err := it.MayBeShadowed()
				if err != nil {
					t.Fatal(err)
				}
				current := w.seq < scan.FlushedSeq() && string(w.value) == string(it.Value())
				if !current && !shadowed {
					t.Fatalf("step %d: table %d: %s=%q read as current; the model has %q", step, scan.Tables()[i].FileNum, key, it.Value(), w.value)
				}
				if current {
					found[key] = true
					if it.SeqNum() == 0 {
						zeroed++
					}
					if it.SeqNum() != w.seq && (opts.KeepSeqNums || it.SeqNum() != 0) {
						t.Fatalf("step %d: %s has seq %d, written at %d", step, key, it.SeqNum(), w.seq)
					}
				}
			}
			it.Close()
		}
		scan.Close()
		for k, w := range model {
			if w.value != nil && w.seq < flushed && binary.BigEndian.Uint64(w.value) >= floor && !found[k] {
				t.Fatalf("step %d: %s (seq %d < %d) not found current by the table scan", step, k, w.seq, flushed)
			}
		}
	}
	// Without these the test could pass with MayBeShadowed always true.
	if certain == 0 || hidden == 0 || (zeroed == 0) == !opts.KeepSeqNums {
		t.Fatalf("%d entries judged current, %d stale ones met, %d zeroed: the run shows nothing", certain, hidden, zeroed)
	}
	// Fully compacted, with nothing skipped, no entry may be shadowed: an
	// entry's own table does not count against it.
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	it, err := db.NewIter(&IterOptions{SkipMemtables: true})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if shadowed, err := it.MayBeShadowed(); shadowed || err != nil {
			t.Fatalf("%s shadowed (%v) in a compacted table", it.Key(), err)
		}
	}
}
