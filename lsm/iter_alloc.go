package lsm

import (
	"sync"

	"github.com/seed84792017/cellcast/lsm/internal/manifest"
	"github.com/seed84792017/cellcast/lsm/internal/memtable"
	"github.com/seed84792017/cellcast/lsm/sstable"
)

// iterAlloc holds what an Iterator reads through: the merging iterator
// and one child per memtable, L0 sublevel and level, reused from iterator to
// iterator (as Pebble's iterAlloc is), so that a seek allocates only the
// blocks it reads from disk.
type iterAlloc struct {
	merging mergingIter
	iters   []internalIterator
	mems    []memtable.Iter
	l0      []levelIter // by L0 sublevel, newest first
	levels  [manifest.NumLevels]levelIter
	// key is the Iterator's key buffer, kept from one to the next.
	key []byte
}

var iterAllocPool = sync.Pool{New: func() any { return &iterAlloc{} }}

// build fills a with rs's iterators, newest first, and returns the
// merging iterator over them.
func (a *iterAlloc) build(d *DB, rs *readState, filters []sstable.BlockPropertyFilter, skipMems bool) (*mergingIter, error) {
	a.iters = a.iters[:0]
	if !skipMems {
		a.mems = grow(a.mems, len(rs.mems))
		for i, m := range rs.mems {
			m.InitIter(&a.mems[i])
			a.iters = append(a.iters, memIter{&a.mems[i]})
		}
	}
	subs := rs.version.L0Sublevels
	a.l0 = grow(a.l0, len(subs))
	for i := range subs {
		l := &a.l0[i]
		*l = levelIter{d: d, files: subs[len(subs)-1-i], filters: filters, ti: l.ti}
		a.iters = append(a.iters, l)
	}
	for lvl := 1; lvl < manifest.NumLevels; lvl++ {
		if files := rs.version.Levels[lvl]; len(files) > 0 {
			l := &a.levels[lvl]
			*l = levelIter{d: d, files: files, filters: filters, ti: l.ti}
			a.iters = append(a.iters, l)
		}
	}
	a.merging = mergingIter{iters: a.iters, h: a.merging.h[:0]}
	return &a.merging, nil
}

// release closes what build opened and returns a to the pool, holding no
// table, memtable or DB.
func (a *iterAlloc) release() {
	for _, it := range a.iters {
		it.Close()
	}
	clear(a.iters)
	clear(a.merging.h)
	a.merging = mergingIter{h: a.merging.h[:0]}
	clear(a.mems)
	a.key = a.key[:0]
	for i := range a.l0 {
		a.l0[i].detach()
	}
	for i := range a.levels {
		a.levels[i].detach()
	}
	iterAllocPool.Put(a)
}

// grow returns s resized to n, keeping its array when it is big enough.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
