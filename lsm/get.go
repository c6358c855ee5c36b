package lsm

import (
	"bytes"

	"github.com/seed84792017/cellcast/lsm/internal/base"
	"github.com/seed84792017/cellcast/lsm/internal/manifest"
	"github.com/seed84792017/cellcast/lsm/sstable"
)

// Get returns a copy of key's value: the Set value, or the merged list of
// its fragments. It returns ErrNotFound when the key has no value.
func (d *DB) Get(key []byte) ([]byte, error) { return d.get(key, d.visibleSeq.Load()) }

// getState gathers one key's operands from newest to oldest.
type getState struct {
	key     []byte
	seq     uint64
	ops     [][]byte
	done    bool // reached a Set or Delete
	hasBase bool
	found   bool
}

// add takes one visible entry; it reports whether the search is over.
func (g *getState) add(k base.InternalKey, v []byte) bool {
	switch k.Kind() {
	case base.KindSet:
		g.ops = append(g.ops, v)
		g.hasBase, g.found, g.done = true, true, true
	case base.KindDelete:
		g.done = true
	case base.KindMerge:
		g.ops = append(g.ops, v)
		g.found = true
	}
	return g.done
}

func (d *DB) get(key []byte, seq uint64) ([]byte, error) {
	rs := d.loadReadState()
	if rs == nil {
		return nil, ErrClosed
	}
	defer rs.unref()
	g := getState{key: key, seq: seq}
	for _, m := range rs.mems {
		if !m.MayContain(key) {
			continue
		}
		it := m.NewIter()
		for it.SeekGE(key); it.Valid() && bytes.Equal(it.Key().UserKey, key); it.Next() {
			if k := it.Key(); k.Seq() <= seq && g.add(k, it.Value()) {
				return g.result(d)
			}
		}
	}
	v := rs.version
	for i := len(v.L0Sublevels) - 1; i >= 0; i-- {
		if f := manifest.Find(v.L0Sublevels[i], key); f != nil {
			if err := d.getFromTable(f, &g); err != nil || g.done {
				return g.resultOrErr(d, err)
			}
		}
	}
	for lvl := 1; lvl < manifest.NumLevels; lvl++ {
		if f := manifest.Find(v.Levels[lvl], key); f != nil {
			if err := d.getFromTable(f, &g); err != nil || g.done {
				return g.resultOrErr(d, err)
			}
		}
	}
	return g.result(d)
}

func (d *DB) getFromTable(f *manifest.FileMetadata, g *getState) error {
	r, ref, err := d.tables.get(f)
	if err != nil {
		return err
	}
	defer ref.release()
	if !r.MayContain(g.key) {
		return nil
	}
	var it sstable.Iter
	r.InitIter(&it, nil)
	seen := false
	for it.SeekGE(g.key); it.Valid() && bytes.Equal(it.Key().UserKey, g.key); it.Next() {
		seen = true
		if k := it.Key(); k.Seq() <= g.seq && g.add(k, it.Value()) {
			break
		}
	}
	if !seen && it.Error() == nil {
		d.m.filterFalsePositives.Add(1)
	}
	return it.Error()
}

func (g *getState) resultOrErr(d *DB, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return g.result(d)
}

func (g *getState) result(d *DB) ([]byte, error) {
	if !g.found {
		return nil, ErrNotFound
	}
	if len(g.ops) == 1 {
		return append([]byte(nil), g.ops[0]...), nil
	}
	return d.opts.Merger.Merge(g.key, g.ops, g.hasBase)
}
