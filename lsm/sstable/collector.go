package sstable

import "github.com/seed84792017/cellcast/lsm/internal/base"

// BlockPropertyCollector sees every entry written to a table and summarizes
// each data block and the whole table in a few bytes, e.g. a min/max zone map
// or a bloom filter of a secondary attribute. A collector instance serves one
// table; the writer gets fresh ones per table.
type BlockPropertyCollector interface {
	// Name identifies the collector; filters find summaries by it.
	Name() string
	// Add sees each entry, in key order, after merges and compaction filters.
	Add(key base.InternalKey, value []byte) error
	// FinishDataBlock returns the summary of the entries since the previous
	// call and resets the per-block state.
	FinishDataBlock() ([]byte, error)
	// FinishTable returns the summary of the whole table.
	FinishTable() ([]byte, error)
}

// BlockPropertyFilter decides from a collector's summary whether a table or
// block may hold entries of interest. Skipping is all-or-nothing per block:
// a skipped block's tombstones are skipped too, so filters suit data whose
// versions do not shadow each other, like value-list fragments.
type BlockPropertyFilter interface {
	// Name is the collector whose summaries this filter reads.
	Name() string
	// Intersects reports whether the summarized entries may be of interest.
	// A table or block without a summary of this name is always read.
	Intersects(prop []byte) (bool, error)
}
