package lsm

import (
	"bytes"

	"github.com/seed84792017/cellcast/lsm/internal/base"
	"github.com/seed84792017/cellcast/lsm/internal/manifest"
	"github.com/seed84792017/cellcast/lsm/sstable"
)

// MemtableLevel is the Level reported for fragments still in memory.
const MemtableLevel = -1

// Fragment is one stored piece of a key's value: a Merge fragment or the Set
// value at the bottom of its list. Key and Value are valid only during the
// callback.
type Fragment struct {
	Key   []byte
	Value []byte
	Kind  Kind
	Seq   uint64
	// Level is MemtableLevel or the LSM level of the table holding it.
	Level int
	// FileNum is the table's number (0 for the memtable).
	FileNum uint64
}

// VisitDecision tells a visit how to go on after a fragment.
type VisitDecision int

const (
	// VisitContinue goes on to older fragments of this key and to other keys.
	VisitContinue VisitDecision = iota
	// VisitSkipKey ignores this key's older fragments, in this and every
	// deeper component.
	VisitSkipKey
	// VisitStop ends the visit.
	VisitStop
)

// VisitOptions shape a visit.
type VisitOptions struct {
	// Snapshot, when set, visits the state as of the snapshot.
	Snapshot *Snapshot
	// Filters skip tables and blocks by their block properties.
	Filters []BlockPropertyFilter
	// Prefix, for VisitRange, is a prefix every key of the range shares;
	// tables whose bloom filter rules it out are skipped. Only useful when
	// Options.FilterPrefixes adds that prefix.
	Prefix []byte
}

// VisitKey calls fn for key's fragments from newest to oldest: the memtables
// first, then L0 newest first, then L1 … L6. It stops below a Set or Delete
// (nothing older is visible) and when fn says so. Deletes are not reported.
func (d *DB) VisitKey(key []byte, o *VisitOptions, fn func(*Fragment) VisitDecision) error {
	rs, seq, filters, err := d.visitSetup(o)
	if err != nil {
		return err
	}
	defer rs.unref()
	fr := Fragment{Key: key}
	// deliver reports whether to stop descending.
	deliver := func(k base.InternalKey, v []byte, level int, num uint64) bool {
		if k.Kind() == base.KindDelete {
			return true
		}
		fr.Value, fr.Kind, fr.Seq, fr.Level, fr.FileNum = v, k.Kind(), k.Seq(), level, num
		return fn(&fr) != VisitContinue || k.Kind() == base.KindSet
	}
	for _, m := range rs.mems {
		if !m.MayContain(key) {
			continue
		}
		it := m.NewIter()
		for it.SeekGE(key); it.Valid() && bytes.Equal(it.Key().UserKey, key); it.Next() {
			if k := it.Key(); k.Seq() <= seq && deliver(k, it.Value(), MemtableLevel, 0) {
				return nil
			}
		}
	}
	v := rs.version
	visitFile := func(f *manifest.FileMetadata, level int) (bool, error) {
		r, ref, err := d.tables.get(f)
		if err != nil {
			return true, err
		}
		defer ref.release()
		// The summaries are in memory; the bloom filter probe costs cache
		// misses, so it goes second.
		if in, err := r.TableIntersects(filters); err != nil || !in {
			return err != nil, err
		}
		if !r.MayContain(key) {
			return false, nil
		}
		var it sstable.Iter // on the stack, as a point read's
		r.InitIter(&it, filters)
		for it.SeekGE(key); it.Valid() && bytes.Equal(it.Key().UserKey, key); it.Next() {
			if k := it.Key(); k.Seq() <= seq && deliver(k, it.Value(), level, f.Num) {
				return true, nil
			}
		}
		return it.Error() != nil, it.Error()
	}
	for i := len(v.L0Sublevels) - 1; i >= 0; i-- {
		if f := manifest.Find(v.L0Sublevels[i], key); f != nil {
			if stop, err := visitFile(f, 0); stop || err != nil {
				return err
			}
		}
	}
	for lvl := 1; lvl < manifest.NumLevels; lvl++ {
		if f := manifest.Find(v.Levels[lvl], key); f != nil {
			if stop, err := visitFile(f, lvl); stop || err != nil {
				return err
			}
		}
	}
	return nil
}

// VisitRange calls fn for the fragments of every key in [lo, hi) (nil bounds
// are open), component by component: all keys of the memtables, then of each
// L0 table newest first, then of L1 … L6. Within a component keys come in
// order and each key's fragments newest first. A key stops being visited
// below its Set or Delete and once fn returns VisitSkipKey for it.
func (d *DB) VisitRange(lo, hi []byte, o *VisitOptions, fn func(*Fragment) VisitDecision) error {
	var prefix []byte
	if o != nil {
		prefix = o.Prefix
	}
	rs, seq, filters, err := d.visitSetup(o)
	if err != nil {
		return err
	}
	defer rs.unref()
	// settled holds keys whose older fragments must not be visited.
	settled := getSettled()
	defer settled.release()
	var fr Fragment
	// walk visits one component; it returns false once fn said stop.
	walk := func(it internalIterator, level int, num uint64) (bool, error) {
		defer it.Close()
		defer settled.endComponent()
		if lo != nil {
			it.SeekGE(lo)
		} else {
			it.First()
		}
		// A memtable iterator can leave a settled key's older fragments
		// unread: a subscription list under a publication scan has many.
		skipper, _ := it.(userKeySkipper)
		pastKey := false // step past the key just settled, not to its next fragment
		step := func() {
			if pastKey && skipper != nil {
				skipper.NextUserKey()
			} else {
				it.Next()
			}
			pastKey = false
		}
		for ; it.Valid(); step() {
			k := it.Key()
			if hi != nil && bytes.Compare(k.UserKey, hi) >= 0 {
				break
			}
			if k.Seq() > seq {
				continue
			}
			if settled.has(k.UserKey) {
				continue
			}
			if k.Kind() == base.KindDelete {
				settled.settle(k.UserKey)
				pastKey = true
				continue
			}
			fr = Fragment{Key: k.UserKey, Value: it.Value(), Kind: k.Kind(), Seq: k.Seq(), Level: level, FileNum: num}
			switch fn(&fr) {
			case VisitStop:
				return false, nil
			case VisitSkipKey:
				settled.settle(k.UserKey)
			default:
				if k.Kind() != base.KindSet {
					continue
				}
				settled.settle(k.UserKey)
			}
			pastKey = true
		}
		return true, it.Error()
	}
	for _, m := range rs.mems {
		if prefix != nil && !m.MayContain(prefix) {
			continue
		}
		if more, err := walk(memIter{m.NewIter()}, MemtableLevel, 0); !more || err != nil {
			return err
		}
	}
	v := rs.version
	for lvl := 0; lvl < manifest.NumLevels; lvl++ {
		files := v.Levels[lvl]
		for i := range files {
			f := files[i]
			if lvl == 0 {
				f = files[len(files)-1-i] // L0 is oldest first; visit newest first
			}
			// hi is exclusive; Overlaps takes inclusive bounds, walk
			// enforces the exclusive one.
			if !f.Overlaps(lo, hi) || (hi != nil && bytes.Compare(f.Smallest.UserKey, hi) >= 0) {
				continue
			}
			r, ref, err := d.tables.get(f)
			if err != nil {
				return err
			}
			in, err := r.TableIntersects(filters)
			if err != nil || !in || (prefix != nil && !r.MayContain(prefix)) {
				ref.release()
				if err != nil {
					return err
				}
				continue
			}
			t := &tableIter{ref: ref, f: f}
			r.InitIter(&t.Iter, filters)
			more, err := walk(t, lvl, f.Num)
			if !more || err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *DB) visitSetup(o *VisitOptions) (*readState, uint64, []BlockPropertyFilter, error) {
	if o == nil {
		o = &VisitOptions{}
	}
	rs := d.loadReadState()
	if rs == nil {
		return nil, 0, nil, ErrClosed
	}
	seq := d.visibleSeq.Load()
	if o.Snapshot != nil {
		seq = o.Snapshot.seq
	}
	return rs, seq, o.Filters, nil
}
