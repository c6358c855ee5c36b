package lsm

import "github.com/seed84792017/cellcast/lsm/internal/manifest"

// TableScan pins the current tables and reads them one at a time, newest
// first: L0 from the newest table, then each deeper level in key order.
// It serves scans that stop early, such as the K most recent rows
// matching a filter: once K are found, a table whose newest write is
// older than the K-th need not be read at all. The memtables are not read
// (FlushedSeq says where the tables end).
type TableScan struct {
	d      *DB
	rs     *readState
	seq    uint64 // the writes visible to every table's iterator
	files  []*manifest.FileMetadata
	tables []ScanTable
}

// ScanTable describes one table of a scan.
type ScanTable struct {
	Level      int
	FileNum    uint64
	LargestSeq uint64 // the sequence number of its newest write
}

// NewTableScan pins the current tables.
func (d *DB) NewTableScan() (*TableScan, error) {
	rs := d.loadReadState()
	if rs == nil {
		return nil, ErrClosed
	}
	s := &TableScan{d: d, rs: rs, seq: d.visibleSeq.Load()}
	add := func(level int, f *manifest.FileMetadata) {
		s.files = append(s.files, f)
		s.tables = append(s.tables, ScanTable{Level: level, FileNum: f.Num, LargestSeq: f.LargestSeq})
	}
	l0 := rs.version.Levels[0]
	for i := len(l0) - 1; i >= 0; i-- {
		add(0, l0[i])
	}
	for lvl := 1; lvl < manifest.NumLevels; lvl++ {
		for _, f := range rs.version.Levels[lvl] {
			add(lvl, f)
		}
	}
	return s, nil
}

// Tables lists the scan's tables, newest first.
func (s *TableScan) Tables() []ScanTable { return s.tables }

// FlushedSeq is the first sequence number the tables do not hold.
func (s *TableScan) FlushedSeq() uint64 { return s.rs.flushedSeq() }

// NewIter reads table i alone, with o's bounds and filters (o's
// SkipMemtables is implied). Its MayBeShadowed looks for newer versions
// in the memtables and in the tables before i.
func (s *TableScan) NewIter(i int, o *IterOptions) (*Iterator, error) {
	if o == nil {
		o = &IterOptions{}
	}
	it, err := s.d.newTableIter(s.files[i], o.Filters, false)
	if err != nil {
		return nil, err
	}
	s.rs.refs.Add(1) // the iterator's, released by its Close
	return &Iterator{d: s.d, rs: s.rs, iter: newMergingIter([]internalIterator{it}), seq: s.seq,
		lower: o.LowerBound, upper: o.UpperBound, skipMems: true}, nil
}

// Close releases the tables.
func (s *TableScan) Close() {
	if s.rs != nil {
		s.rs.unref()
		s.rs = nil
	}
}
