package pebbledual

import (
	"bytes"
	"context"
	"errors"
	"io"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"

	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/lsm"
)

// Open opens (or creates) the store in dir with a block cache of
// cacheBytes (0: 64 MiB).
func Open(dir string, cfg listdb.Config, cacheBytes int64) (*listdb.Store, error) {
	if cacheBytes == 0 {
		cacheBytes = 64 << 20
	}
	c := pebble.NewCache(cacheBytes)
	defer c.Unref()
	o := &pebble.Options{Cache: c, Merger: merger, Logger: quiet{}}
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		o.Levels[i].FilterType = pebble.TableFilter
	}
	db, err := pebble.Open(dir, o)
	if err != nil {
		return nil, err
	}
	st, err := listdb.NewStore(&backend{db: db}, cfg)
	if err != nil {
		db.Close()
		return nil, err
	}
	return st, nil
}

// merger is listdb's: fragments concatenated newest first under one
// header.
var merger = &pebble.Merger{
	Name: listdb.Merger.Name,
	Merge: func(key, v []byte) (pebble.ValueMerger, error) {
		return &lists{key: key, ops: [][]byte{append([]byte(nil), v...)}}, nil
	},
}

type lists struct {
	key []byte
	ops [][]byte // newest first
}

func (l *lists) MergeNewer(v []byte) error {
	l.ops = append([][]byte{append([]byte(nil), v...)}, l.ops...)
	return nil
}

func (l *lists) MergeOlder(v []byte) error {
	l.ops = append(l.ops, append([]byte(nil), v...))
	return nil
}

func (l *lists) Finish(base bool) ([]byte, io.Closer, error) {
	out, err := listdb.Merger.Merge(l.key, l.ops, base)
	return out, nil, err
}

type quiet struct{}

func (quiet) Infof(string, ...interface{})  {}
func (quiet) Errorf(string, ...interface{}) {}
func (quiet) Fatalf(format string, args ...interface{}) {
	panic(errors.New("pebble: fatal error"))
}

type backend struct{ db *pebble.DB }

func key(cell []byte, l listdb.List) []byte {
	return append(append(make([]byte, 0, len(cell)+1), cell...), byte(l))
}

func (b *backend) Append(appends []listdb.Append) (listdb.Commit, error) {
	batch := b.db.NewBatch()
	defer batch.Close()
	for _, a := range appends {
		if err := batch.Merge(key(a.Cell, a.List), a.Fragment, nil); err != nil {
			return listdb.Commit{}, err
		}
	}
	return listdb.Commit{}, batch.Commit(pebble.NoSync)
}

// Wait syncs Pebble's WAL through everything committed so far (Pebble
// shares the fsync among concurrent callers); it has no write-only wait,
// so both modes sync.
func (b *backend) Wait(_ listdb.Commit, _ bool) error { return b.db.LogData(nil, pebble.Sync) }

// Visit reports each key's whole merged list as one fragment: Pebble
// merges every operand on read. Block property filters are Cellcast's;
// they are not applied.
func (b *backend) Visit(cell, subtreeEnd []byte, lists listdb.Lists, _ []lsm.BlockPropertyFilter, fn func(listdb.List, *lsm.Fragment) lsm.VisitDecision) error {
	scan := func(lower, upper []byte) (bool, error) {
		it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
		if err != nil {
			return false, err
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			k := it.Key()
			l := listdb.List(k[len(k)-1])
			if (l == listdb.Pubs && !lists.Pubs) || (l == listdb.Subs && !lists.Subs) {
				continue
			}
			v, err := it.ValueAndErr()
			if err != nil {
				return false, err
			}
			f := &lsm.Fragment{Key: k, Value: v, Kind: lsm.KindSet, Level: lsm.MemtableLevel}
			if fn(l, f) == lsm.VisitStop {
				return true, nil
			}
		}
		return false, it.Error()
	}
	stopped, err := scan(key(cell, listdb.Pubs), key(cell, listdb.Subs+1))
	if err != nil || stopped || subtreeEnd == nil {
		return err
	}
	_, err = scan(key(cell, listdb.Subs+1), subtreeEnd)
	return err
}

func (b *backend) Meta() listdb.MetaStore { return meta{b.db} }
func (b *backend) Flush() error           { return b.db.Flush() }
func (b *backend) Compact(ctx context.Context) error {
	return b.db.Compact(ctx, nil, bytes.Repeat([]byte{0xff}, 64), true)
}
func (b *backend) Checkpoint(dir string) error { return b.db.Checkpoint(dir) }
func (b *backend) Metrics() []*lsm.Metrics     { return nil }

// Err is always nil: Pebble reports a failed write to that write's caller.
func (b *backend) Err() error   { return nil }
func (b *backend) Close() error { return b.db.Close() }

type meta struct{ db *pebble.DB }

func (m meta) Get(k []byte) ([]byte, error) {
	v, closer, err := m.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, lsm.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return append([]byte(nil), v...), nil
}

func (m meta) Set(k, v []byte) error { return m.db.Set(k, v, pebble.Sync) }

func (m meta) Scan(lower, upper []byte, fn func(k, v []byte) error) error {
	it, err := m.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			return err
		}
	}
	return it.Error()
}
