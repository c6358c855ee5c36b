package lsm

import "github.com/seed84792017/cellcast/lsm/internal/manifest"

// An iterator's seek reads a block of every L0 sublevel, so an L0 below the
// compaction threshold can still cost each seek several block reads for as
// long as no writes arrive to fill it. Like LevelDB's seek compactions and
// Pebble's read-triggered ones, seeks spend a budget; once they have cost
// about what compacting L0 into the base level would, L0 is compacted
// although it is below the threshold.

// seekCost is the compaction work one block read is worth: LevelDB's
// estimate of 16 KiB.
const seekCost = 16 << 10

// l0SeekBudget is how many L0 sublevel seeks v may take before its L0 is
// worth compacting; 0 when L0 is empty.
func (d *DB) l0SeekBudget(v *manifest.Version) int64 {
	if v.NumFiles(0) == 0 {
		return 0
	}
	t := d.opts.levelTargets(v)
	return int64(v.LevelSize(0)+v.LevelSize(t.base))/seekCost + 1
}

// noteL0Seeks charges a seek of rs's L0 sublevels and wakes the compactor
// when the budget runs out.
func (d *DB) noteL0Seeks(rs *readState) {
	n := int64(rs.version.L0Depth())
	if n == 0 || d.l0Seeks.Add(n) < rs.l0SeekBudget || !d.l0SeekWake.CompareAndSwap(false, true) {
		return
	}
	d.mu.Lock()
	d.compactCond.Signal()
	d.mu.Unlock()
}

// l0SeeksDue reports whether seeks have spent v's L0 budget.
func (d *DB) l0SeeksDue(v *manifest.Version) bool {
	b := d.l0SeekBudget(v)
	return b > 0 && d.l0Seeks.Load() >= b
}

// resetL0Seeks starts a new budget once L0 has been compacted.
func (d *DB) resetL0Seeks() {
	d.l0Seeks.Store(0)
	d.l0SeekWake.Store(false)
}
