package lsm

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/seed84792017/cellcast/lsm/internal/manifest"
)

// NumLevels is the number of levels, L0 through L6.
const NumLevels = manifest.NumLevels

type metricsCounters struct {
	userBytes, walBytes              atomic.Int64
	flushes, flushBytes, flushNanos  atomic.Int64
	compactions, moves, compactNanos atomic.Int64
	subcompactions                   atomic.Int64
	compactBytesIn, compactBytesOut  atomic.Int64
	droppedByCompaction              atomic.Int64
	levelBytesIn                     [NumLevels]atomic.Int64
	stalls, stallNanos, slowdowns    atomic.Int64
	filterFalsePositives             atomic.Int64
	backgroundErrors                 atomic.Int64
}

// LevelMetrics describe one level.
type LevelMetrics struct {
	NumFiles int
	Size     uint64
	// BytesIn is what flushes (L0) or compactions wrote into the level.
	BytesIn uint64
}

// Metrics is a point-in-time view of the engine, for dashboards and
// benchmarks.
type Metrics struct {
	Levels [NumLevels]LevelMetrics
	// L0Sublevels is L0's depth: what L0 compaction and write stalls count.
	L0Sublevels int

	MemTableSize    int64
	MemTableCount   int // immutable memtables waiting for a flush, plus one
	UserBytes       int64
	WALBytes        int64
	FlushCount      int64
	FlushBytes      int64
	FlushDuration   time.Duration
	CompactCount    int64
	CompactMoves    int64
	CompactBytesIn  int64
	CompactBytesOut int64
	CompactDuration time.Duration
	// Subcompactions counts the key ranges L0 compactions ran beside
	// each one's first.
	Subcompactions   int64
	CompactedDropped int64 // entries removed by tombstone elision or the filter

	BlockCacheSize   int64
	BlockCacheHits   int64
	BlockCacheMisses int64
	BlocksFromCache  int64
	BlocksFromDisk   int64
	BytesFromDisk    int64
	TableCacheSize   int

	// FilterNegatives are table lookups the bloom filter ruled out;
	// FilterFalsePositives passed the filter but found no such key.
	FilterNegatives      int64
	FilterPositives      int64
	FilterFalsePositives int64

	WriteStalls        int64
	WriteStallDuration time.Duration
	WriteSlowdowns     int64

	// BackgroundErrors counts failed WAL writes and syncs, flushes,
	// compactions and MANIFEST updates. The first one makes the DB refuse
	// writes until it is reopened (see DB.Err), so any non-zero value means
	// the DB is not ready for writes: alert on it.
	BackgroundErrors int64
}

// WriteAmp is bytes written to disk (WAL, flushes, compactions) per byte
// the user wrote.
func (m *Metrics) WriteAmp() float64 {
	if m.UserBytes == 0 {
		return 0
	}
	return float64(m.WALBytes+m.FlushBytes+m.CompactBytesOut) / float64(m.UserBytes)
}

// DiskSize is the total size of all live tables.
func (m *Metrics) DiskSize() uint64 {
	var n uint64
	for _, l := range m.Levels {
		n += l.Size
	}
	return n
}

// Metrics returns current figures.
func (d *DB) Metrics() *Metrics {
	m := &Metrics{}
	d.mu.Lock()
	v := d.vs.current
	for lvl := range m.Levels {
		m.Levels[lvl] = LevelMetrics{NumFiles: v.NumFiles(lvl), Size: v.LevelSize(lvl), BytesIn: uint64(d.m.levelBytesIn[lvl].Load())}
	}
	m.L0Sublevels = v.L0Depth()
	m.MemTableSize = d.mem.Size()
	for _, im := range d.imm {
		m.MemTableSize += im.Size()
	}
	m.MemTableCount = len(d.imm) + 1
	d.mu.Unlock()
	m.Levels[0].BytesIn = uint64(d.m.flushBytes.Load())
	m.UserBytes = d.m.userBytes.Load()
	m.WALBytes = d.m.walBytes.Load()
	m.FlushCount = d.m.flushes.Load()
	m.FlushBytes = d.m.flushBytes.Load()
	m.FlushDuration = time.Duration(d.m.flushNanos.Load())
	m.CompactCount = d.m.compactions.Load()
	m.CompactMoves = d.m.moves.Load()
	m.CompactBytesIn = d.m.compactBytesIn.Load()
	m.CompactBytesOut = d.m.compactBytesOut.Load()
	m.CompactDuration = time.Duration(d.m.compactNanos.Load())
	m.Subcompactions = d.m.subcompactions.Load()
	m.CompactedDropped = d.m.droppedByCompaction.Load()
	m.BlockCacheSize = d.cache.Size()
	m.BlockCacheHits = d.cache.Hits()
	m.BlockCacheMisses = d.cache.Misses()
	m.BlocksFromCache = d.stats.BlocksFromCache.Load()
	m.BlocksFromDisk = d.stats.BlocksFromDisk.Load()
	m.BytesFromDisk = d.stats.BytesFromDisk.Load()
	m.TableCacheSize = d.tables.len()
	m.FilterNegatives = d.stats.FilterNegatives.Load()
	m.FilterPositives = d.stats.FilterPositives.Load()
	m.FilterFalsePositives = d.m.filterFalsePositives.Load()
	m.WriteStalls = d.m.stalls.Load()
	m.WriteStallDuration = time.Duration(d.m.stallNanos.Load())
	m.WriteSlowdowns = d.m.slowdowns.Load()
	m.BackgroundErrors = d.m.backgroundErrors.Load()
	return m
}

func (m *Metrics) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "level  files        size     bytes-in\n")
	for lvl, l := range m.Levels {
		fmt.Fprintf(&b, "L%d   %7d %11d %12d\n", lvl, l.NumFiles, l.Size, l.BytesIn)
	}
	fmt.Fprintf(&b, "L0 sublevels %d\n", m.L0Sublevels)
	fmt.Fprintf(&b, "user %d B, WAL %d B, flushed %d B (%d, %s), compacted %d B -> %d B (%d, %d moves, %s), w-amp %.2f\n",
		m.UserBytes, m.WALBytes, m.FlushBytes, m.FlushCount, m.FlushDuration.Round(time.Millisecond),
		m.CompactBytesIn, m.CompactBytesOut, m.CompactCount, m.CompactMoves, m.CompactDuration.Round(time.Millisecond), m.WriteAmp())
	fmt.Fprintf(&b, "blocks: cache %d disk %d; filter: negatives %d positives %d false-positives %d; stalls %d (%s), slowdowns %d\n",
		m.BlocksFromCache, m.BlocksFromDisk, m.FilterNegatives, m.FilterPositives, m.FilterFalsePositives, m.WriteStalls, m.WriteStallDuration, m.WriteSlowdowns)
	if m.BackgroundErrors > 0 {
		fmt.Fprintf(&b, "background errors %d: writes refused\n", m.BackgroundErrors)
	}
	return b.String()
}
