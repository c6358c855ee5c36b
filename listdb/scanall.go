package listdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/seed84792017/cellcast/lsm"
	"github.com/seed84792017/cellcast/subscriptions"
)

// ListScanner is implemented by backends that can walk every key of one
// list, for maintenance scans of the whole store (ScanPublications). It is
// apart from Backend so that backends made for experiments need not
// provide it.
type ListScanner interface {
	// ScanList calls fn with each cell key of list l (namespace byte and
	// Dewey encoding) and its whole value (every fragment merged), in key
	// order, as of one moment.
	ScanList(l List, fn func(cell, list []byte) error) error
}

// ErrNoScan: the store's backend cannot walk its lists.
var ErrNoScan = errors.New("listdb: the backend cannot scan its lists (no ListScanner)")

// ScanPublications calls fn with every stored publication that is live at
// the stamp it takes (Tmax > asOf), once each, in no set order, and
// returns that stamp: every publication stamped before asOf and
// acknowledged is reported unless it expired, and every later one is
// not. It is meant for rebuilding a secondary copy of the publications
// (the catalog) after a crash; it reads the whole publications list, so
// it is no operation for the request path.
func (st *Store) ScanPublications(ctx context.Context, fn func(*subscriptions.Publication) error) (asOf int64, err error) {
	sc, ok := st.b.(ListScanner)
	if !ok {
		return 0, ErrNoScan
	}
	asOf, _ = st.stamp()
	defer st.cfg.inflight.end(asOf)
	// Under fixed granularity one publication is stored at every leaf.
	var seen map[int64]bool
	if st.cfg.Granularity == Fixed {
		seen = map[int64]bool{}
	}
	err = sc.ScanList(Pubs, func(cell, list []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		var ferr error
		err := forEach(list, func(r *Rec) bool {
			if r.Kind != KindPublication || r.T >= asOf || r.Tmax <= asOf || seen[r.T] {
				return true
			}
			p, err := r.Publication()
			if err != nil {
				ferr = err
				return false
			}
			if seen != nil {
				seen[r.T] = true
			}
			ferr = fn(&p)
			return ferr == nil
		})
		if err != nil {
			return fmt.Errorf("list of cell %x: %w", cell, err)
		}
		return ferr
	})
	return asOf, err
}

// ScanNamespaces calls fn with every key and value of db in the cell and
// topic namespaces, in key order: the walk both layouts' ScanList make.
func ScanNamespaces(db *lsm.DB, fn func(key, value []byte) error) error {
	for _, ns := range []subscriptions.Namespace{subscriptions.NSCell, subscriptions.NSTopic} {
		it, err := db.NewIter(&lsm.IterOptions{LowerBound: []byte{byte(ns)}, UpperBound: []byte{byte(ns) + 1}})
		if err != nil {
			return err
		}
		for ok := it.First(); ok; ok = it.Next() {
			if err := fn(it.Key(), it.Value()); err != nil {
				it.Close()
				return err
			}
		}
		err = it.Error()
		if cerr := it.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
