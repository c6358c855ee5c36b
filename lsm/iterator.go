package lsm

import (
	"bytes"

	"github.com/seed84792017/cellcast/lsm/internal/base"
)

// IterOptions bound an iterator.
type IterOptions struct {
	// LowerBound is inclusive, UpperBound exclusive; nil means unbounded.
	LowerBound, UpperBound []byte
	// Filters skip tables and blocks whose block properties do not
	// intersect (see BlockPropertyFilter for the caveat on tombstones).
	Filters []BlockPropertyFilter
}

// Iterator walks user keys in order with their values (Set values or merged
// lists) as of one sequence number. It is forward-only and not safe for
// concurrent use. Key and Value are valid until the next move.
type Iterator struct {
	d     *DB
	rs    *readState
	iter  *mergingIter
	seq   uint64
	lower []byte
	upper []byte

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
	iters, err := d.newInternalIters(rs, o.Filters)
	if err != nil {
		rs.unref()
		return nil, err
	}
	return &Iterator{d: d, rs: rs, iter: newMergingIter(iters), seq: seq, lower: o.LowerBound, upper: o.UpperBound}, nil
}

// First moves to the first key at or after the lower bound.
func (it *Iterator) First() bool {
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
	it.iter.Close()
	it.rs.unref()
	it.rs = nil
	return it.err
}
