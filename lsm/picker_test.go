package lsm

import (
	"testing"

	"github.com/seed84792017/cellcast/lsm/internal/base"
	"github.com/seed84792017/cellcast/lsm/internal/manifest"
)

// TestAFullLevelBelowDrainsFirst: when L0 and the base level are both due,
// the base level goes first if it is fuller against the level below it
// than L0 is against it; with the base level under its target, L0 goes.
func TestAFullLevelBelowDrainsFirst(t *testing.T) {
	d := &DB{opts: (&Options{LBaseMaxBytes: 64 << 20}).withDefaults()}
	l0 := func(n int) []*manifest.FileMetadata {
		fs := make([]*manifest.FileMetadata, n)
		for i := range fs {
			fs[i] = &manifest.FileMetadata{Num: uint64(100 + i), Size: 4 << 20}
		}
		return fs
	}
	for _, tc := range []struct {
		l0    int
		l5    uint64
		best  int
		cause string
	}{
		{l0: 10, l5: 150 << 20, best: 5, cause: "L5 at 2.3x its target is drained before L0 (2.5x) adds to it"},
		{l0: 8, l5: 40 << 20, best: 0, cause: "L5 under its target takes L0"},
		{l0: 2, l5: 40 << 20, best: -1, cause: "nothing is due"},
		{l0: 2, l5: 100 << 20, best: 5, cause: "only L5 is due"},
	} {
		v := versionWith(map[int]uint64{6: 500 << 20})
		v.Levels[5] = []*manifest.FileMetadata{{Num: 50, Size: tc.l5}}
		v.Levels[0] = l0(tc.l0)
		v.L0Sublevels = manifest.Sublevels(v.Levels[0])
		if best, _, _ := d.levelScores(v); best != tc.best {
			t.Errorf("L0 %d files, L5 %d MiB: picked L%d, want L%d (%s)", tc.l0, tc.l5>>20, best, tc.best, tc.cause)
		}
	}
}

// TestMinOverlapPicksTheCheapestMove: of a level's files, the one that
// rewrites the fewest bytes below per byte of its own moves.
func TestMinOverlapPicksTheCheapestMove(t *testing.T) {
	ik := func(s string) base.InternalKey { return base.InternalKey{UserKey: []byte(s)} }
	file := func(num uint64, lo, hi string, size uint64) *manifest.FileMetadata {
		return &manifest.FileMetadata{Num: num, Smallest: ik(lo), Largest: ik(hi), Size: size}
	}
	v := &manifest.Version{}
	v.Levels[5] = []*manifest.FileMetadata{
		file(1, "a", "c", 10), // over 300 bytes below: ratio 30
		file(2, "d", "f", 10), // over 20: ratio 2
		file(3, "g", "i", 1),  // over 20: ratio 20
	}
	v.Levels[6] = []*manifest.FileMetadata{
		file(10, "a", "b", 200), file(11, "c", "c", 100),
		file(12, "e", "e", 20),
		file(13, "h", "h", 20),
	}
	if got := minOverlap(v, 5, v.Levels[5]); got.Num != 2 {
		t.Fatalf("picked table %d, want 2", got.Num)
	}
	v.Levels[6] = v.Levels[6][:2]
	if got := minOverlap(v, 5, v.Levels[5]); got.Num != 2 {
		t.Fatalf("with nothing below two files, picked table %d, want the first of them (2)", got.Num)
	}
}
