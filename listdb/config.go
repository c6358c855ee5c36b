package listdb

import (
	"fmt"
	"time"

	"github.com/seed84792017/cellcast/lsm"
	"github.com/seed84792017/cellcast/subscriptions"
)

// Granularity selects how hierarchy is stored.
type Granularity int

const (
	// Variable writes once at the operation's cell and reads the cell's
	// subtree range plus a point lookup per ancestor (the default).
	Variable Granularity = iota
	// Fixed expands every operation to the quad tree's leaves at
	// LeafDepth: a write per leaf and a point read per leaf. The
	// baseline of thesis Fig. 4.12–4.15; geo cells only.
	Fixed
)

// Durability says what a write has reached when its operation returns,
// and so which crash it survives. Stamps are taken and records applied in
// order under the store's lock; the wait for the disk happens outside it,
// so concurrent operations share fsyncs (group commit).
type Durability int

const (
	// Synced: the write is in the WAL on disk (fsynced). It survives a
	// crash of the process and of the machine. The default.
	Synced Durability = iota
	// Written: the write is in the WAL in the OS (write(2) returned). It
	// survives a crash of the process (kill -9) but not of the OS or the
	// machine.
	Written
	// Buffered: the write may still be in the process's memory for up to
	// a millisecond or so; a crash of the process can lose the latest
	// writes. For in-process experiments, never for a server.
	Buffered
)

// String names the mode as the broker's --durability flag does.
func (d Durability) String() string {
	switch d {
	case Synced:
		return "sync"
	case Written:
		return "os"
	case Buffered:
		return "buffered"
	}
	return fmt.Sprintf("Durability(%d)", int(d))
}

// ParseDurability reads a mode's name: sync, os or buffered.
func ParseDurability(s string) (Durability, error) {
	for _, d := range []Durability{Synced, Written, Buffered} {
		if s == d.String() {
			return d, nil
		}
	}
	return 0, fmt.Errorf("listdb: unknown durability %q: use sync (fsync before answering, the default), os (written to the OS: survives kill -9, not a machine crash) or buffered (experiments only)", s)
}

// Config shapes a Store.
type Config struct {
	Limits subscriptions.Limits
	// Clock stamps operations. Default: a SystemClock kept above stamps
	// issued before a restart.
	Clock subscriptions.Clock
	// Now reads the current time for the compaction filter without taking a
	// stamp. Default: the wall clock.
	Now func() int64
	// Durability is how far a write has gone when its operation returns.
	// Default Synced.
	Durability Durability
	// CellsOnly matches by cells and times alone, as the thesis does,
	// without refining by shapes: a benchmark's baseline, never a
	// default (subscribers then hear of places that do not meet theirs).
	CellsOnly bool
	// Granularity, and for Fixed the LeafDepth every geo cell expands to
	// (four children a cell).
	Granularity Granularity
	LeafDepth   int
	// MaxTopicDepth bounds topic paths. Default 8.
	MaxTopicDepth int

	// inflight ties the engines' expiry filter (made by DBOptions) to the
	// store's operations (NewStore): pass NewStore the Config that
	// DBOptions was called on.
	inflight *inflight
}

// A store's default memory budget, shared by its engines: memtables and
// block cache. The same total for every architecture keeps comparisons fair.
const (
	DefaultMemTableBudget = 8 << 20
	DefaultCacheBudget    = 128 << 20
)

// DBOptions returns lsm options with the list merger, the expiry filter and
// the newest-time collector, on top of base (may be nil). Unset memtable
// and cache sizes get this engine's share of the default budget among
// engines engines.
func (c *Config) DBOptions(base *lsm.Options, engines int) *lsm.Options {
	var o lsm.Options
	if base != nil {
		o = *base
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = DefaultMemTableBudget / int64(engines)
	}
	if o.BlockCacheSize == 0 && o.Cache == nil {
		o.BlockCacheSize = DefaultCacheBudget / int64(engines)
	}
	o.Merger = Merger
	if c.inflight == nil {
		c.inflight = newInflight()
	}
	o.CompactionFilter = &ExpiryFilter{Now: c.now(), InFlight: c.inflight.oldestStamp}
	o.BlockPropertyCollectors = append(o.BlockPropertyCollectors, NewTimesCollector)
	o.FilterPrefixes = CellPrefixes
	return &o
}

func (c *Config) now() func() int64 {
	if c.Now != nil {
		return c.Now
	}
	return func() int64 { return time.Now().UnixNano() }
}
