package listdb

import (
	"bytes"

	"github.com/seed84792017/cellcast/subscriptions"
)

// An operation with a cover stores its one record under each of its cells
// and scans each of them, so it can meet another record through several
// pairs of cells. Only the canonical pair reports the match
// (subscriptions.Canonical): the rule reads just the two records and the
// key the other was found under, so a scan split across shards keeps it.
// Records of one cell each have one pair, and callers skip this check.

// reports reports whether a match found while scanning the operation's
// cell via, of a record with cells other stored under key, is the one to
// report. own are the operation's cells; ownPub says whether the
// operation is the publication (of a publication pair, the operation's).
// Under fixed granularity records lie at leaves, not at their cells, and
// an operation on a cover reads several cells: the scan's seen set takes
// each record once per operation instead.
func (st *Store) reports(ownPub bool, own []subscriptions.Cell, via subscriptions.Cell, other []subscriptions.Cell, key []byte) bool {
	if st.cfg.Granularity == Fixed || len(own) > 1 {
		return true // the scan takes each record once (newScanState)
	}
	at, ok := cellUnder(other, key)
	if !ok {
		return false // not stored under one of its cells: never written so
	}
	if ownPub {
		return subscriptions.Canonical(own, other, via, at)
	}
	return subscriptions.Canonical(other, own, at, via)
}

// cellUnder returns the cell of cells whose lists key holds: the cell key
// alone (TwoDB) or followed by a list flag (DualDB). A flag is below every
// component byte, so a descendant's key never passes for its ancestor's.
func cellUnder(cells []subscriptions.Cell, key []byte) (subscriptions.Cell, bool) {
	var buf [64]byte
	for _, c := range cells {
		ck := cellKeyTo(buf[:0], c)
		if bytes.HasPrefix(key, ck) && (len(key) == len(ck) || (len(key) == len(ck)+1 && key[len(ck)] <= byte(Subs))) {
			return c, true
		}
	}
	return subscriptions.Cell{}, false
}

// keysFor returns the keys an operation on cells writes to, each once.
func (st *Store) keysFor(cells []subscriptions.Cell) ([][]byte, error) {
	var keys [][]byte
	for _, c := range cells {
		ks, err := st.cellsFor(c)
		if err != nil {
			return nil, err
		}
		for _, k := range ks {
			if !containsKey(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	return keys, nil
}

func containsKey(keys [][]byte, k []byte) bool {
	for _, x := range keys {
		if bytes.Equal(x, k) {
			return true
		}
	}
	return false
}
