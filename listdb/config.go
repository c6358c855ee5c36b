package listdb

import (
	"time"

	"github.com/seed84792017/cellcast/dewey"
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

// Config shapes a Store.
type Config struct {
	Limits subscriptions.Limits
	// Clock stamps operations. Default: a SystemClock kept above stamps
	// issued before a restart.
	Clock subscriptions.Clock
	// Now reads the current time for the compaction filter without taking a
	// stamp. Default: the wall clock.
	Now func() int64
	// Sync makes every write durable before the operation returns.
	Sync bool
	// Granularity, and for Fixed the Tree and LeafDepth to expand to.
	Granularity Granularity
	Tree        *dewey.QuadTree
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
