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

// tableIter is a table iterator holding a table cache reference. It is
// embedded by value where it can be reused (a level's, an Iterator's L0).
type tableIter struct {
	sstable.Iter
	ref tableRef
	f   *manifest.FileMetadata
}

func (t *tableIter) file() *manifest.FileMetadata { return t.f }

func (t *tableIter) Close() error {
	t.ref.release()
	t.ref = tableRef{}
	return nil
}

// open points t at f, for reads through the block cache or, for a
// compaction, around it (values valid only until the next move).
func (t *tableIter) open(d *DB, f *manifest.FileMetadata, filters []sstable.BlockPropertyFilter, compaction bool) error {
	r, ref, err := d.tables.get(f)
	if err != nil {
		return err
	}
	if compaction {
		r.InitCompactionIter(&t.Iter)
	} else {
		r.InitIter(&t.Iter, filters)
	}
	t.ref, t.f = ref, f
	return nil
}

// newTableIter returns a tableIter of its own over f.
func (d *DB) newTableIter(f *manifest.FileMetadata, filters []sstable.BlockPropertyFilter, compaction bool) (*tableIter, error) {
	t := &tableIter{}
	if err := t.open(d, f, filters, compaction); err != nil {
		return nil, err
	}
	return t, nil
}

// levelIter walks the non-overlapping files of one level, opening each only
// when reached, through one reused tableIter.
type levelIter struct {
	d       *DB
	files   []*manifest.FileMetadata
	filters []sstable.BlockPropertyFilter
	// compaction reads bypass the block cache (see tableIter.open).
	compaction bool
	idx        int
	ti         tableIter
	cur        *tableIter // &ti while a file is open
	err        error
}

func (l *levelIter) open(idx int) {
	l.closeCur()
	l.idx = idx
	if l.idx >= len(l.files) {
		return
	}
	if err := l.ti.open(l.d, l.files[l.idx], l.filters, l.compaction); err != nil {
		l.err = err
		return
	}
	l.cur = &l.ti
}

// detach drops every reference l holds, keeping its table iterator's
// buffers for the next use.
func (l *levelIter) detach() {
	l.ti.Iter.Detach()
	*l = levelIter{ti: tableIter{Iter: l.ti.Iter}}
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
