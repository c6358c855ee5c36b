package lsm

import (
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/seed84792017/cellcast/lsm/internal/base"
	"github.com/seed84792017/cellcast/lsm/sstable"
	"github.com/seed84792017/cellcast/lsm/vfs"
)

// Kind says what an entry means: a Set value, a Delete tombstone or a Merge
// fragment.
type Kind = base.Kind

// Entry kinds.
const (
	KindDelete = base.KindDelete
	KindSet    = base.KindSet
	KindMerge  = base.KindMerge
)

// Size limits on user input. A batch holding a larger key or value is refused
// whole.
const (
	MaxKeySize   = 64 << 10
	MaxValueSize = 64 << 20
	// MaxBatchSize bounds one batch's encoded size.
	MaxBatchSize = 1 << 30
)

// Merger combines value-list fragments. Merge gets the operands of one key,
// newest first; when the last one is a full (Set) value, base is true. The
// result of merging a run of operands must equal merging any split of it in
// two: Merge(a, Merge(b, c)) == Merge(a, b, c). The engine merges during
// flush, compaction and reads and never holds more than it was given.
type Merger struct {
	// Name is recorded so a DB is not opened with an incompatible merger.
	Name  string
	Merge func(key []byte, operands [][]byte, base bool) ([]byte, error)
}

// ConcatMerger is the default merger: the list is the fragments' bytes
// concatenated, newest first.
var ConcatMerger = &Merger{
	Name: "cellcast.concat",
	Merge: func(_ []byte, ops [][]byte, _ bool) ([]byte, error) {
		n := 0
		for _, op := range ops {
			n += len(op)
		}
		out := make([]byte, 0, n)
		for _, op := range ops {
			out = append(out, op...)
		}
		return out, nil
	},
}

// FilterDecision is a compaction filter's verdict on one entry.
type FilterDecision int

const (
	// FilterKeep leaves the entry as it is.
	FilterKeep FilterDecision = iota
	// FilterRemove drops the entry. For a Set value above data it could
	// shadow, the engine leaves a tombstone in its place.
	FilterRemove
	// FilterChange replaces the value with the one returned.
	FilterChange
)

// CompactionFilter sees each surviving entry (after merging) during flushes
// and compactions. Entries a live snapshot can see are never shown to it. It
// must be safe for concurrent use: a flush and a compaction may run at once.
type CompactionFilter interface {
	Filter(level int, key []byte, kind Kind, value []byte) (FilterDecision, []byte)
}

// CompactionFilterFunc adapts a function to CompactionFilter.
type CompactionFilterFunc func(level int, key []byte, kind Kind, value []byte) (FilterDecision, []byte)

// Filter implements CompactionFilter.
func (f CompactionFilterFunc) Filter(level int, key []byte, kind Kind, value []byte) (FilterDecision, []byte) {
	return f(level, key, kind, value)
}

// BlockPropertyCollector and BlockPropertyFilter summarize and skip blocks;
// see package sstable.
type (
	BlockPropertyCollector = sstable.BlockPropertyCollector
	BlockPropertyFilter    = sstable.BlockPropertyFilter
)

// Options configure a DB. The zero value of every field means its default.
type Options struct {
	// FS is the file system. Default vfs.Default.
	FS vfs.FS
	// Logger receives background events. Default slog.Default().
	Logger *slog.Logger

	// MemTableSize is the memtable size that triggers a flush. Default 4 MiB.
	MemTableSize int64
	// MemTableStopWritesThreshold is how many full memtables may wait for a
	// flush before writes stall. Default 2.
	MemTableStopWritesThreshold int
	// WALFlushDelay is how long a write without Sync may wait in memory
	// before the log's flusher hands it to the OS, with the writes that
	// came in the meantime. A longer delay makes fewer write(2)s; a
	// process crash loses what was waiting (at most 1 MiB waits: past it
	// the writer writes the log out itself). Default 500µs.
	WALFlushDelay time.Duration

	// L0CompactionThreshold is the L0 depth (sublevels: how many tables a
	// read of one key may meet in L0) that makes L0 compaction due. Default 4.
	L0CompactionThreshold int
	// L0SlowdownWritesThreshold delays each write by 1ms once L0 is this
	// many sublevels deep. Default 12, the stop threshold: like Pebble, writes run at
	// full speed until they must stall (an L0 compaction into a 64 MiB base
	// level takes long enough for early delays to cost more than they buy).
	L0SlowdownWritesThreshold int
	// L0StopWritesThreshold stalls writes at this L0 depth. Default 12.
	L0StopWritesThreshold int
	// LBaseMaxBytes is the base level's target size: the level L0
	// compacts into, the highest one with data (see levelTargets). Each
	// deeper level is about LevelMultiplier times larger. Default 64 MiB.
	LBaseMaxBytes int64
	// LevelMultiplier is the size ratio between levels. Default 10.
	LevelMultiplier int
	// CompactConcurrency is how many compactions a manual Compact runs at
	// once, each over its own key range, and how many key ranges a
	// compaction of L0 into the base level is cut into, to run at once
	// (subcompactions). Otherwise background compactions run one at a
	// time. Default GOMAXPROCS.
	CompactConcurrency int
	// TargetFileSize is the size at which compaction starts a new output
	// table. Default 2 MiB.
	TargetFileSize int64

	// BlockSize is the uncompressed data block size. Default 4 KiB.
	BlockSize int
	// Compression of data blocks. Default sstable.Snappy.
	Compression sstable.Compression
	// BloomBitsPerKey sizes each table's key filter. Default 10; negative
	// disables filters.
	BloomBitsPerKey int
	// BlockCacheSize bounds the block cache in bytes when Cache is nil.
	// Default 8 MiB.
	BlockCacheSize int64
	// Cache, when set, is a block cache shared with other DBs.
	Cache *sstable.Cache
	// MaxOpenFiles bounds the table cache. Default 1000.
	MaxOpenFiles int
	// MaxManifestFileSize rotates the MANIFEST past this size. Default 4 MiB.
	MaxManifestFileSize int64

	// Merger combines Merge fragments. Default ConcatMerger.
	Merger *Merger
	// CompactionFilter, when set, sees entries during flush and compaction.
	CompactionFilter CompactionFilter
	// KeepSeqNums keeps every entry's sequence number on disk. By default
	// a compaction zeroes it where nothing can tell the difference, as
	// Pebble does: a Set that every snapshot sees and that no level below
	// holds. Its table trailer then compresses to almost nothing (about 4
	// bytes a key), and Iterator.SeqNum says 0 for it. Set it when a
	// caller reads SeqNum or TableScan's LargestSeq after compactions.
	KeepSeqNums bool
	// OnShadowed, when set, is called during flush and compaction with each
	// Set that a newer entry of its key hides from every reader, as it is
	// dropped: a secondary index can drop what pointed at it. It runs on
	// flush and compaction goroutines, several at once, so it must be
	// quick, safe for concurrent use and must not write to this DB; key
	// and value are valid only during the call.
	OnShadowed func(key, value []byte)
	// BlockPropertyCollectors make fresh collectors for each table written.
	BlockPropertyCollectors []func() BlockPropertyCollector
	// FilterPrefixes names extra strings of each key (typically prefixes,
	// e.g. every ancestor of a hierarchical key) to add to table bloom
	// filters; VisitOptions.Prefix then skips tables that hold no key with
	// that prefix. It must be deterministic and safe for concurrent use.
	FilterPrefixes func(userKey []byte, add func(prefix []byte))
}

// withDefaults returns a copy with every unset field at its default.
func (o *Options) withDefaults() *Options {
	var out Options
	if o != nil {
		out = *o
	}
	setDefault := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	setDefault64 := func(p *int64, v int64) {
		if *p == 0 {
			*p = v
		}
	}
	if out.FS == nil {
		out.FS = vfs.Default
	}
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	setDefault64(&out.MemTableSize, 4<<20)
	setDefault(&out.MemTableStopWritesThreshold, 2)
	if out.WALFlushDelay == 0 {
		out.WALFlushDelay = 500 * time.Microsecond
	}
	setDefault(&out.L0CompactionThreshold, 4)
	setDefault(&out.L0SlowdownWritesThreshold, 12)
	setDefault(&out.L0StopWritesThreshold, 12)
	setDefault64(&out.LBaseMaxBytes, 64<<20)
	setDefault(&out.LevelMultiplier, 10)
	setDefault64(&out.TargetFileSize, 2<<20)
	setDefault(&out.CompactConcurrency, runtime.GOMAXPROCS(0))
	setDefault(&out.BlockSize, 4<<10)
	setDefault(&out.BloomBitsPerKey, 10)
	setDefault64(&out.BlockCacheSize, 8<<20)
	setDefault(&out.MaxOpenFiles, 1000)
	setDefault64(&out.MaxManifestFileSize, 4<<20)
	if out.Merger == nil {
		out.Merger = ConcatMerger
	}
	return &out
}

// validate reports settings that cannot work together.
func (o *Options) validate() error {
	switch {
	case o.MemTableSize < 64<<10:
		return fmt.Errorf("%w: MemTableSize %d is below 64 KiB", ErrInvalidOptions, o.MemTableSize)
	case o.L0CompactionThreshold < 1:
		return fmt.Errorf("%w: L0CompactionThreshold must be positive", ErrInvalidOptions)
	case o.L0SlowdownWritesThreshold < o.L0CompactionThreshold:
		return fmt.Errorf("%w: L0SlowdownWritesThreshold below L0CompactionThreshold", ErrInvalidOptions)
	case o.L0StopWritesThreshold < o.L0SlowdownWritesThreshold:
		return fmt.Errorf("%w: L0StopWritesThreshold below L0SlowdownWritesThreshold", ErrInvalidOptions)
	case o.LevelMultiplier < 2:
		return fmt.Errorf("%w: LevelMultiplier must be at least 2", ErrInvalidOptions)
	case o.TargetFileSize < 4<<10 || o.LBaseMaxBytes < o.TargetFileSize:
		return fmt.Errorf("%w: TargetFileSize must be at least 4 KiB and at most LBaseMaxBytes", ErrInvalidOptions)
	case o.CompactConcurrency < 1:
		return fmt.Errorf("%w: CompactConcurrency must be positive", ErrInvalidOptions)
	case o.MemTableStopWritesThreshold < 1:
		return fmt.Errorf("%w: MemTableStopWritesThreshold must be positive", ErrInvalidOptions)
	case o.WALFlushDelay < 0:
		return fmt.Errorf("%w: WALFlushDelay must not be negative", ErrInvalidOptions)
	case o.Merger.Merge == nil || o.Merger.Name == "":
		return fmt.Errorf("%w: Merger needs a Name and a Merge function", ErrInvalidOptions)
	}
	return nil
}

func (o *Options) writerOptions() sstable.WriterOptions {
	wo := sstable.WriterOptions{BlockSize: o.BlockSize, Compression: o.Compression, BloomBitsPerKey: o.BloomBitsPerKey, FilterPrefixes: o.FilterPrefixes}
	for _, mk := range o.BlockPropertyCollectors {
		wo.Collectors = append(wo.Collectors, mk())
	}
	return wo
}

// WriteOptions control one write.
type WriteOptions struct {
	// Sync makes the write durable (fsync of the WAL) before it returns.
	Sync bool
}

// Sync and NoSync are the two common WriteOptions.
var (
	Sync   = &WriteOptions{Sync: true}
	NoSync = &WriteOptions{Sync: false}
)
