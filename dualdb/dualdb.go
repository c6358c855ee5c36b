package dualdb

import (
	"context"
	"sync"

	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/lsm"
)

// Open opens (or creates) a DualDB store in dir. opts tunes the lsm engine;
// the list merger, expiry filter and collector are added to it, and unset
// memtable and cache sizes get the store's whole default budget.
func Open(dir string, cfg listdb.Config, opts *lsm.Options) (*listdb.Store, error) {
	o := cfg.DBOptions(opts, 1)
	o.FilterPrefixes = listdb.FlaggedCellPrefixes
	db, err := lsm.Open(dir, o)
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

type backend struct{ db *lsm.DB }

func key(cell []byte, l listdb.List) []byte {
	return append(append(make([]byte, 0, len(cell)+1), cell...), byte(l))
}

// batches recycles write batches: a batch is free again once its commit
// returns.
var batches = sync.Pool{New: func() any { return lsm.NewBatch() }}

func (b *backend) Append(appends []listdb.Append) (listdb.Commit, error) {
	batch := batches.Get().(*lsm.Batch)
	defer func() { batch.Reset(); batches.Put(batch) }()
	for _, a := range appends {
		if err := batch.Merge(key(a.Cell, a.List), a.Fragment); err != nil {
			return listdb.Commit{}, err
		}
	}
	pos, err := b.db.ApplyNoSyncWait(batch)
	return listdb.Commit{Pos: pos}, err
}

func (b *backend) Wait(c listdb.Commit, sync bool) error { return b.db.WaitWAL(c.Pos, sync) }

func (b *backend) Visit(cell, subtreeEnd []byte, lists listdb.Lists, filters []lsm.BlockPropertyFilter, fn func(listdb.List, *lsm.Fragment) lsm.VisitDecision) error {
	stopped := false
	route := func(f *lsm.Fragment) lsm.VisitDecision {
		l := listdb.List(f.Key[len(f.Key)-1])
		if (l == listdb.Pubs && !lists.Pubs) || (l == listdb.Subs && !lists.Subs) {
			return lsm.VisitSkipKey
		}
		d := fn(l, f)
		stopped = d == lsm.VisitStop
		return d
	}
	// The cell's own lists: point reads with full-key bloom filters, or
	// for a self-join both adjacent keys in one pass.
	var err error
	switch {
	case lists.Pubs && lists.Subs:
		err = b.db.VisitRange(key(cell, listdb.Pubs), key(cell, listdb.Subs+1), &lsm.VisitOptions{Filters: filters, Prefix: cell}, route)
	case lists.Pubs:
		err = b.db.VisitKey(key(cell, listdb.Pubs), &lsm.VisitOptions{Filters: filters}, route)
	case lists.Subs:
		err = b.db.VisitKey(key(cell, listdb.Subs), &lsm.VisitOptions{Filters: filters}, route)
	}
	if err != nil || stopped || subtreeEnd == nil {
		return err
	}
	// The descendants: one range, skipping tables with nothing under the
	// cell (of the one list wanted).
	o := &lsm.VisitOptions{Filters: filters, Prefix: listdb.DescendantsPrefix(cell, false, 0)}
	switch {
	case lists.Pubs && !lists.Subs:
		o.Prefix = listdb.DescendantsPrefix(cell, true, listdb.Pubs)
	case lists.Subs && !lists.Pubs:
		o.Prefix = listdb.DescendantsPrefix(cell, true, listdb.Subs)
	}
	return b.db.VisitRange(key(cell, listdb.Subs+1), subtreeEnd, o, route)
}

func (b *backend) Meta() listdb.MetaStore            { return listdb.LSMMeta(b.db) }
func (b *backend) Flush() error                      { return b.db.Flush() }
func (b *backend) Compact(ctx context.Context) error { return b.db.Compact(ctx, nil, nil) }
func (b *backend) Checkpoint(dir string) error       { return b.db.Checkpoint(dir) }
func (b *backend) Metrics() []*lsm.Metrics           { return []*lsm.Metrics{b.db.Metrics()} }
func (b *backend) Err() error                        { return b.db.Err() }
func (b *backend) Close() error                      { return b.db.Close() }

// ScanList implements listdb.ListScanner: both namespaces' keys of list l,
// in one iterator each over the DB.
func (b *backend) ScanList(l listdb.List, fn func(cell, list []byte) error) error {
	return listdb.ScanNamespaces(b.db, func(k, v []byte) error {
		if len(k) < 2 || listdb.List(k[len(k)-1]) != l {
			return nil
		}
		return fn(k[:len(k)-1], v)
	})
}
