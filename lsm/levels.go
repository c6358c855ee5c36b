package lsm

import (
	"math"

	"github.com/seed84792017/cellcast/lsm/internal/manifest"
)

// levelTargets are the level sizes compaction aims for, derived from the
// data (Pebble's and RocksDB's dynamic level bytes): the deepest level holds
// most of it and each level above a LevelMultiplier-th of the one below, so
// at most about a tenth of the bytes are older versions in upper levels,
// whatever the DB's size. L0 compacts into the base level, the highest level
// used; the levels above it stay empty.
type levelTargets struct {
	base int
	max  [manifest.NumLevels]float64 // +Inf: not a compaction source
}

func (o *Options) levelTargets(v *manifest.Version) levelTargets {
	t := levelTargets{base: manifest.NumLevels - 1}
	for i := range t.max {
		t.max[i] = math.Inf(1)
	}
	first := 0 // highest non-empty level below L0
	var size float64
	for lvl := 1; lvl < manifest.NumLevels; lvl++ {
		if s := v.LevelSize(lvl); s > 0 {
			if first == 0 {
				first = lvl
			}
			size += float64(s)
		}
	}
	if first == 0 {
		return t
	}
	mult := float64(o.LevelMultiplier)
	size += float64(v.LevelSize(0))
	bottom := size - size/mult
	cur := bottom
	for lvl := manifest.NumLevels - 2; lvl >= first; lvl-- {
		cur /= mult
	}
	// Move the base up while it would exceed LBaseMaxBytes; never below
	// the highest level holding data, which must keep draining downwards.
	baseMax := float64(o.LBaseMaxBytes)
	t.base = first
	for t.base > 1 && cur > baseMax {
		t.base--
		cur /= mult
	}
	smoothed := 1.0
	if t.base < manifest.NumLevels-1 {
		smoothed = math.Pow(bottom/baseMax, 1/float64(manifest.NumLevels-1-t.base))
	}
	n := baseMax
	for lvl := t.base; lvl < manifest.NumLevels-1; lvl++ {
		t.max[lvl] = n
		n *= smoothed
	}
	return t
}
