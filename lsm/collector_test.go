package lsm

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"github.com/seed84792017/cellcast/lsm/vfs"
)

// zoneMap keeps the min and max of an 8-byte big-endian number at the start
// of each value, per block and per table.
type zoneMap struct{ bmin, bmax, tmin, tmax uint64 }

func newZoneMap() BlockPropertyCollector {
	return &zoneMap{bmin: ^uint64(0), tmin: ^uint64(0)}
}

func (z *zoneMap) Name() string { return "zone" }

func (z *zoneMap) Add(_ InternalKey, v []byte) error {
	if len(v) < 8 {
		return nil
	}
	n := binary.BigEndian.Uint64(v)
	z.bmin, z.bmax = min(z.bmin, n), max(z.bmax, n)
	z.tmin, z.tmax = min(z.tmin, n), max(z.tmax, n)
	return nil
}

func encodeZone(lo, hi uint64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, lo), hi)
}

func (z *zoneMap) FinishDataBlock() ([]byte, error) {
	b := encodeZone(z.bmin, z.bmax)
	z.bmin, z.bmax = ^uint64(0), 0
	return b, nil
}

func (z *zoneMap) FinishTable() ([]byte, error) { return encodeZone(z.tmin, z.tmax), nil }

// atLeast passes blocks holding any value >= n.
type atLeast uint64

func (atLeast) Name() string { return "zone" }
func (a atLeast) Intersects(p []byte) (bool, error) {
	if len(p) != 16 {
		return false, fmt.Errorf("zone summary of %d bytes", len(p))
	}
	return binary.BigEndian.Uint64(p[8:]) >= uint64(a), nil
}

func TestBlockPropertiesThroughDB(t *testing.T) {
	opts := smallOptions(vfs.NewMem())
	opts.BlockPropertyCollectors = []func() BlockPropertyCollector{newZoneMap}
	db := mustOpen(t, "/db", opts)
	defer db.Close()
	// Values grow with the key, so zones are narrow and ordered.
	for i := 0; i < 20000; i++ {
		v := binary.BigEndian.AppendUint64(nil, uint64(i))
		if err := db.Set([]byte(fmt.Sprintf("k%06d", i)), append(v, "payload-payload"...), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	tables, err := db.Tables()
	if err != nil || len(tables) < 3 {
		t.Fatalf("%d tables, %v", len(tables), err)
	}
	nums, err := db.TableNums()
	var want []uint64
	for _, tb := range tables {
		want = append(want, tb.FileNum)
	}
	slices.Sort(want)
	if err != nil || !slices.Equal(nums, want) {
		t.Fatalf("TableNums %v (%v), Tables %v", nums, err, want)
	}
	for _, tb := range tables {
		z := tb.Props.User["zone"]
		if len(z) != 16 || binary.BigEndian.Uint64(z) > binary.BigEndian.Uint64(z[8:]) {
			t.Fatalf("table %d zone summary %x", tb.FileNum, z)
		}
	}
	count := func(filters []BlockPropertyFilter) (int, int64) {
		before := db.Metrics().BlocksFromDisk + db.Metrics().BlocksFromCache
		n := 0
		err := db.VisitRange(nil, nil, &VisitOptions{Filters: filters}, func(f *Fragment) VisitDecision {
			if binary.BigEndian.Uint64(f.Value) >= 19900 {
				n++
			}
			return VisitContinue
		})
		if err != nil {
			t.Fatal(err)
		}
		return n, db.Metrics().BlocksFromDisk + db.Metrics().BlocksFromCache - before
	}
	all, allBlocks := count(nil)
	some, someBlocks := count([]BlockPropertyFilter{atLeast(19900)})
	if all != 100 || some != 100 {
		t.Fatalf("found %d unfiltered, %d filtered; want 100", all, some)
	}
	if someBlocks*20 > allBlocks {
		t.Fatalf("filtered visit read %d blocks, unfiltered %d: filter did not skip", someBlocks, allBlocks)
	}
}

// A range visit with a Prefix skips tables whose filter lacks the prefix,
// and still finds everything under a prefix that is present.
func TestVisitPrefixSkipsTables(t *testing.T) {
	opts := smallOptions(vfs.NewMem())
	opts.FilterPrefixes = func(k []byte, add func([]byte)) {
		for i := 1; i < len(k); i++ {
			add(k[:i])
		}
	}
	db := mustOpen(t, "/db", opts)
	defer db.Close()
	for i := 0; i < 20000; i++ {
		// Groups "g0000/…" to "g0999/…", twenty keys each.
		db.Set([]byte(fmt.Sprintf("g%04d/%02d", i%1000, i/1000)), []byte("v"), nil)
	}
	db.Compact(context.Background(), nil, nil)
	read := func(prefix []byte) (int, int64) {
		m0 := db.Metrics()
		n := 0
		hi := append(append([]byte(nil), prefix...), 0xff)
		err := db.VisitRange(prefix, hi, &VisitOptions{Prefix: prefix}, func(*Fragment) VisitDecision { n++; return VisitContinue })
		if err != nil {
			t.Fatal(err)
		}
		m1 := db.Metrics()
		return n, m1.BlocksFromCache + m1.BlocksFromDisk - m0.BlocksFromCache - m0.BlocksFromDisk
	}
	if n, _ := read([]byte("g0420/")); n != 20 {
		t.Fatalf("found %d keys under g0420/, want 20", n)
	}
	if n, blocks := read([]byte("h0420/")); n != 0 || blocks != 0 {
		t.Fatalf("absent prefix: %d keys, %d blocks read", n, blocks)
	}
}
