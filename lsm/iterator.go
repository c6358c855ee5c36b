package lsm

import (
	"bytes"

	"github.com/seed84792017/cellcast/lsm/internal/base"
	"github.com/seed84792017/cellcast/lsm/internal/manifest"
)

// IterOptions bound an iterator.
type IterOptions struct {
	// LowerBound is inclusive, UpperBound exclusive; nil means unbounded.
	LowerBound, UpperBound []byte
	// Filters skip tables and blocks whose block properties do not
	// intersect (see BlockPropertyFilter for the caveat on tombstones).
	Filters []BlockPropertyFilter
	// SkipMemtables reads the tables only: the writes numbered from
	// Iterator.FlushedSeq on are left out (an index of its own, say,
	// covers them).
	SkipMemtables bool
}

// Iterator walks user keys in order with their values (Set values or merged
// lists) as of one sequence number. It is forward-only and not safe for
// concurrent use. Key and Value are valid until the next move or Close.
type Iterator struct {
	d  *DB
	rs *readState
	// alloc holds iter and its children; Close returns it to the pool
	// (nil for a TableScan's iterator, made of one table).
	alloc *iterAlloc
	iter  *mergingIter
	seq   uint64
	lower []byte
	upper []byte
	// skipMems: the memtables are not read (IterOptions.SkipMemtables).
	skipMems bool

	key   []byte
	value []byte
	valid bool
	// atSet means iter sits on the Set entry that is the current value;
	// otherwise iter is already past the current key.
	atSet bool
	ops   [][]byte
	err   error
}

// NewIter returns an iterator over the current state.
func (d *DB) NewIter(o *IterOptions) (*Iterator, error) { return d.newIter(o, d.visibleSeq.Load()) }

func (d *DB) newIter(o *IterOptions, seq uint64) (*Iterator, error) {
	if o == nil {
		o = &IterOptions{}
	}
	rs := d.loadReadState()
	if rs == nil {
		return nil, ErrClosed
	}
	a := iterAllocPool.Get().(*iterAlloc)
	m, err := a.build(d, rs, o.Filters, o.SkipMemtables)
	if err != nil {
		rs.unref()
		return nil, err
	}
	return &Iterator{d: d, rs: rs, alloc: a, iter: m, key: a.key[:0], seq: seq, lower: o.LowerBound, upper: o.UpperBound, skipMems: o.SkipMemtables}, nil
}

// First moves to the first key at or after the lower bound.
func (it *Iterator) First() bool {
	it.d.noteL0Seeks(it.rs)
	if it.lower != nil {
		it.iter.SeekGE(it.lower)
	} else {
		it.iter.First()
	}
	return it.findNext()
}

// SeekGE moves to the first key >= key (and >= the lower bound).
func (it *Iterator) SeekGE(key []byte) bool {
	if it.lower != nil && bytes.Compare(key, it.lower) < 0 {
		key = it.lower
	}
	it.d.noteL0Seeks(it.rs)
	it.iter.SeekGE(key)
	return it.findNext()
}

// Next moves to the next key.
func (it *Iterator) Next() bool {
	if !it.valid {
		return false
	}
	if it.atSet {
		it.skipCurrentKey()
	}
	return it.findNext()
}

// skipCurrentKey advances iter past every entry of it.key.
func (it *Iterator) skipCurrentKey() {
	for it.iter.Valid() && bytes.Equal(it.iter.Key().UserKey, it.key) {
		it.iter.Next()
	}
}

// findNext settles on the next user key that has a value visible at seq.
func (it *Iterator) findNext() bool {
	it.valid, it.atSet = false, false
	for it.iter.Valid() {
		k := it.iter.Key()
		if it.upper != nil && bytes.Compare(k.UserKey, it.upper) >= 0 {
			return false
		}
		if k.Seq() > it.seq {
			it.iter.Next()
			continue
		}
		it.key = append(it.key[:0], k.UserKey...)
		switch k.Kind() {
		case base.KindSet:
			it.value, it.valid, it.atSet = it.iter.Value(), true, true
			return true
		case base.KindDelete:
			it.skipCurrentKey()
		case base.KindMerge:
			return it.mergeCurrent()
		}
	}
	it.err = it.iter.Error()
	return false
}

// mergeCurrent folds the current key's fragments down to its base.
func (it *Iterator) mergeCurrent() bool {
	it.ops = it.ops[:0]
	hasBase := false
	for it.iter.Valid() && bytes.Equal(it.iter.Key().UserKey, it.key) {
		k := it.iter.Key()
		if k.Kind() == base.KindDelete {
			break
		}
		it.ops = append(it.ops, it.iter.Value())
		if k.Kind() == base.KindSet {
			hasBase = true
			break
		}
		it.iter.Next()
	}
	it.skipCurrentKey()
	if err := it.iter.Error(); err != nil {
		it.err = err
		return false
	}
	if len(it.ops) == 1 {
		it.value = it.ops[0]
	} else {
		v, err := it.d.opts.Merger.Merge(it.key, it.ops, hasBase)
		if err != nil {
			it.err = err
			return false
		}
		it.value = v
	}
	it.valid = true
	return true
}

// FlushedSeq is the first sequence number the iterator's tables do not
// hold: every write numbered below it is in them (or was dropped as
// shadowed), every later one still in a memtable when the iterator was
// made.
func (it *Iterator) FlushedSeq() uint64 { return it.rs.flushedSeq() }

// MayBeShadowed reports whether a newer version of the current key (a Set
// or a Delete) may hide in what the iterator did not read: a memtable it
// skipped, or a block or table its filters skipped. It reads no data
// block: memtables are searched, tables newer than the current entry's
// are asked through their bloom filters, so true may be a false positive
// and false is certain. Only a snapshot open while a table was written
// can leave two versions of a key in one table; against such a table the
// answer assumes the newer version was read.
func (it *Iterator) MayBeShadowed() (bool, error) {
	if !it.valid {
		return false, nil
	}
	if !it.atSet {
		return true, nil // a merged value: which fragments were skipped is not tracked
	}
	cur := it.iter.Key()
	own, _ := it.iter.top().(interface{ file() *manifest.FileMetadata })
	if own == nil {
		return false, nil // a memtable entry: every newer memtable was read
	}
	f := own.file()
	if it.skipMems {
		for _, m := range it.rs.mems {
			if !m.MayContain(it.key) {
				continue
			}
			mi := m.NewIter()
			for mi.SeekGE(it.key); mi.Valid() && bytes.Equal(mi.Key().UserKey, it.key); mi.Next() {
				if s := mi.Key().Seq(); s > cur.Seq() && s <= it.seq {
					return true, nil
				}
			}
		}
	}
	// Newer versions sit in L0 tables newer than the entry's, or in levels
	// above its own: walk newest first and stop at the entry's table.
	v := it.rs.version
	l0 := v.Levels[0]
	for i := len(l0) - 1; i >= 0; i-- {
		if done, may, err := it.newerMay(l0[i], f, cur.Seq()); done || err != nil {
			return may, err
		}
	}
	for lvl := 1; lvl < manifest.NumLevels; lvl++ {
		for _, g := range v.Levels[lvl] {
			if done, may, err := it.newerMay(g, f, cur.Seq()); done || err != nil {
				return may, err
			}
		}
	}
	return false, nil
}

// newerMay checks table g for a version of the current key newer than
// seq, by its bloom filter. done ends the walk: g is the entry's own table
// f (nothing older can shadow it) or may hold a newer version.
func (it *Iterator) newerMay(g, f *manifest.FileMetadata, seq uint64) (done, may bool, err error) {
	if g == f {
		return true, false, nil
	}
	if g.LargestSeq <= seq || !g.Overlaps(it.key, it.key) {
		return false, false, nil
	}
	r, ref, err := it.d.tables.get(g)
	if err != nil {
		return true, false, err
	}
	defer ref.release()
	may = r.MayContain(it.key)
	return may, may, nil
}

// SeqNum is the sequence number of the current key's value, or 0 for a
// merged value (made of several writes).
func (it *Iterator) SeqNum() uint64 {
	if !it.valid || !it.atSet {
		return 0
	}
	return it.iter.Key().Seq()
}

// Valid reports whether the iterator is at a key.
func (it *Iterator) Valid() bool { return it.valid }

// Key returns the current key.
func (it *Iterator) Key() []byte { return it.key }

// Value returns the current value.
func (it *Iterator) Value() []byte { return it.value }

// Error returns the error that stopped iteration, if any.
func (it *Iterator) Error() error { return it.err }

// Close releases the iterator's pinned state.
func (it *Iterator) Close() error {
	if it.rs == nil {
		return nil
	}
	if it.alloc != nil {
		it.alloc.key = it.key
		it.alloc.release() // closes iter's children
		it.alloc = nil
	} else {
		it.iter.Close()
	}
	// The merging iterator may now serve another Iterator.
	it.iter, it.valid, it.key = nil, false, nil
	it.rs.unref()
	it.rs = nil
	return it.err
}
