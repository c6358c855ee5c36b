package lsm

import (
	"bytes"
	"sort"

	"github.com/seed84792017/cellcast/lsm/internal/base"
	"github.com/seed84792017/cellcast/lsm/internal/manifest"
	"github.com/seed84792017/cellcast/lsm/internal/memtable"
	"github.com/seed84792017/cellcast/lsm/sstable"
)

// internalIterator walks internal entries in internal-key order. Keys are
// valid until the next move; values stay valid (they point into memtables or
// immutable cached blocks).
type internalIterator interface {
	First()
	// SeekGE moves to the first entry whose user key is >= userKey.
	SeekGE(userKey []byte)
	Next()
	Valid() bool
	Key() base.InternalKey
	Value() []byte
	Error() error
	Close() error
}

type memIter struct{ *memtable.Iter }

// userKeySkipper is an iterator that can move past the rest of the
// current user key's entries without reading them: a memtable's.
type userKeySkipper interface{ NextUserKey() }

func (memIter) Error() error { return nil }
func (memIter) Close() error { return nil }

// tableIter is a table iterator holding a table cache reference.
type tableIter struct {
	*sstable.Iter
	release func()
	f       *manifest.FileMetadata
}

func (t *tableIter) file() *manifest.FileMetadata { return t.f }

func (t *tableIter) Close() error {
	if t.release != nil {
		t.release()
		t.release = nil
	}
	return nil
}

func (d *DB) newTableIter(f *manifest.FileMetadata, filters []sstable.BlockPropertyFilter) (internalIterator, error) {
	r, release, err := d.tables.get(f)
	if err != nil {
		return nil, err
	}
	return &tableIter{Iter: r.NewIter(filters), release: release, f: f}, nil
}

// newCompactionTableIter reads a compaction input without the block cache;
// its values are valid only until the next move.
func (d *DB) newCompactionTableIter(f *manifest.FileMetadata) (internalIterator, error) {
	r, release, err := d.tables.get(f)
	if err != nil {
		return nil, err
	}
	return &tableIter{Iter: r.NewCompactionIter(), release: release, f: f}, nil
}

// levelIter walks the non-overlapping files of one level, opening each only
// when reached.
type levelIter struct {
	d       *DB
	files   []*manifest.FileMetadata
	filters []sstable.BlockPropertyFilter
	// compaction reads bypass the block cache (see newCompactionTableIter).
	compaction bool
	idx        int
	cur        internalIterator
	err        error
}

func (l *levelIter) open(idx int) {
	l.closeCur()
	l.idx = idx
	if l.idx >= len(l.files) {
		return
	}
	var it internalIterator
	var err error
	if l.compaction {
		it, err = l.d.newCompactionTableIter(l.files[l.idx])
	} else {
		it, err = l.d.newTableIter(l.files[l.idx], l.filters)
	}
	if err != nil {
		l.err = err
		return
	}
	l.cur = it
}

func (l *levelIter) closeCur() {
	if l.cur != nil {
		l.cur.Close()
		l.cur = nil
	}
}

// skipEmpty moves past exhausted files.
func (l *levelIter) skipEmpty() {
	for l.cur != nil && !l.cur.Valid() {
		if err := l.cur.Error(); err != nil {
			l.err = err
			l.closeCur()
			return
		}
		l.open(l.idx + 1)
		if l.cur != nil {
			l.cur.First()
		}
	}
}

func (l *levelIter) First() {
	l.err = nil
	l.open(0)
	if l.cur != nil {
		l.cur.First()
	}
	l.skipEmpty()
}

func (l *levelIter) SeekGE(userKey []byte) {
	l.err = nil
	i := sort.Search(len(l.files), func(i int) bool {
		return bytes.Compare(l.files[i].Largest.UserKey, userKey) >= 0
	})
	l.open(i)
	if l.cur != nil {
		l.cur.SeekGE(userKey)
	}
	l.skipEmpty()
}

func (l *levelIter) Next() {
	l.cur.Next()
	l.skipEmpty()
}

func (l *levelIter) file() *manifest.FileMetadata { return l.files[l.idx] }
func (l *levelIter) Valid() bool                  { return l.err == nil && l.cur != nil && l.cur.Valid() }
func (l *levelIter) Key() base.InternalKey        { return l.cur.Key() }
func (l *levelIter) Value() []byte                { return l.cur.Value() }
func (l *levelIter) Error() error                 { return l.err }
func (l *levelIter) Close() error                 { l.closeCur(); return nil }

// newInternalIters builds one iterator per component of rs, newest first.
func (d *DB) newInternalIters(rs *readState, filters []sstable.BlockPropertyFilter, skipMems bool) ([]internalIterator, error) {
	var iters []internalIterator
	for _, m := range rs.mems {
		if !skipMems {
			iters = append(iters, memIter{m.NewIter()})
		}
	}
	l0 := rs.version.Levels[0]
	for i := len(l0) - 1; i >= 0; i-- {
		it, err := d.newTableIter(l0[i], filters)
		if err != nil {
			for _, it := range iters {
				it.Close()
			}
			return nil, err
		}
		iters = append(iters, it)
	}
	for lvl := 1; lvl < manifest.NumLevels; lvl++ {
		if files := rs.version.Levels[lvl]; len(files) > 0 {
			iters = append(iters, &levelIter{d: d, files: files, filters: filters})
		}
	}
	return iters, nil
}
