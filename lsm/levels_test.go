package lsm

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/lsm/internal/manifest"
	"github.com/seed84792017/cellcast/lsm/vfs"
)

// versionWith builds a version whose levels hold one file of each size.
func versionWith(sizes map[int]uint64) *manifest.Version {
	v := &manifest.Version{}
	for lvl, size := range sizes {
		v.Levels[lvl] = []*manifest.FileMetadata{{Num: uint64(lvl + 1), Size: size}}
	}
	return v
}

func TestLevelTargetsFollowTheData(t *testing.T) {
	o := (&Options{LBaseMaxBytes: 64 << 20}).withDefaults()
	for _, tc := range []struct {
		sizes map[int]uint64
		base  int
	}{
		{nil, 6},
		{map[int]uint64{0: 8 << 20}, 6},
		{map[int]uint64{6: 60 << 20}, 6},
		{map[int]uint64{6: 600 << 20}, 5},
		{map[int]uint64{6: 800 << 20}, 4},
		{map[int]uint64{5: 60 << 20, 6: 600 << 20}, 5},
		{map[int]uint64{4: 60 << 20, 5: 600 << 20, 6: 60 << 30}, 3},
		{map[int]uint64{6: 100 << 30}, 2},
		// A DB laid out by fixed targets keeps its highest level as base.
		{map[int]uint64{1: 1 << 20, 2: 1 << 20}, 1},
	} {
		v := versionWith(tc.sizes)
		got := o.levelTargets(v)
		if got.base != tc.base {
			t.Errorf("%v: base L%d, want L%d", tc.sizes, got.base, tc.base)
		}
		for lvl := 1; lvl < manifest.NumLevels; lvl++ {
			if src := lvl >= got.base && lvl < manifest.NumLevels-1; src == (got.max[lvl] > 1e300) {
				t.Errorf("%v: L%d target %g (base L%d)", tc.sizes, lvl, got.max[lvl], got.base)
			}
		}
		if got.base < manifest.NumLevels-1 && got.max[got.base] != float64(o.LBaseMaxBytes) {
			t.Errorf("%v: base target %g", tc.sizes, got.max[got.base])
		}
	}
}

// TestDataSettlesInTheBottomLevels: writes end in the base level and below,
// the levels above it stay empty, and a second Compact has nothing to do.
func TestDataSettlesInTheBottomLevels(t *testing.T) {
	fs := vfs.NewMem()
	db := mustOpen(t, "/db", smallOptions(fs))
	defer db.Close()
	for i := range 20000 {
		if err := db.Set(fmt.Appendf(nil, "key%06d", (i*7919)%20000), make([]byte, 100), NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	db.mu.Lock()
	v := db.vs.current
	base := db.opts.levelTargets(v).base
	for lvl := 1; lvl < base; lvl++ {
		if v.NumFiles(lvl) > 0 {
			t.Errorf("L%d holds %d files above the base level L%d", lvl, v.NumFiles(lvl), base)
		}
	}
	db.mu.Unlock()
	if err := db.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	m := db.Metrics()
	for lvl := 0; lvl < NumLevels-1; lvl++ {
		if m.Levels[lvl].NumFiles > 0 {
			t.Errorf("after Compact L%d holds %d files", lvl, m.Levels[lvl].NumFiles)
		}
	}
	if err := db.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	if again := db.Metrics(); again.CompactCount != m.CompactCount || again.CompactBytesOut != m.CompactBytesOut {
		t.Errorf("a second Compact rewrote settled tables: %d -> %d compactions", m.CompactCount, again.CompactCount)
	}
	for i := range 20000 {
		if _, err := db.Get(fmt.Appendf(nil, "key%06d", i)); err != nil {
			t.Fatalf("key%06d: %v", i, err)
		}
	}
}

// TestSeeksCompactL0: L0 below the compaction threshold is compacted once
// iterator seeks have paid for it, and reads are unchanged.
func TestSeeksCompactL0(t *testing.T) {
	o := smallOptions(vfs.NewMem())
	o.L0CompactionThreshold = 4
	db := mustOpen(t, "/db", o)
	defer db.Close()
	for f := range 2 {
		for i := range 500 {
			if err := db.Set(fmt.Appendf(nil, "key%06d", i*2+f), []byte("v"), NoSync); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if n := db.Metrics().Levels[0].NumFiles; n != 2 {
		t.Fatalf("L0 holds %d files, want 2", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; db.Metrics().Levels[0].NumFiles > 0; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("L0 still holds %d files after %d seeks", db.Metrics().Levels[0].NumFiles, i)
		}
		it, err := db.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		k := fmt.Appendf(nil, "key%06d", i%1000)
		if !it.SeekGE(k) || string(it.Key()) != string(k) {
			t.Fatalf("SeekGE(%s) = %s", k, it.Key())
		}
		it.Close()
	}
}
