package listdb

import (
	"fmt"

	"github.com/seed84792017/cellcast/lsm"
	"github.com/seed84792017/cellcast/subscriptions"
)

// oldest is the stamp below which no record of list is live at now.
func (st *Store) oldest(list List, now int64) int64 { return now - st.span[list].v.Load() }

// scan visits the lists that an operation at c, stamped now, must read: the
// subtree and the ancestors (variable), or the leaves (fixed). bounds give,
// per list, the oldest record time that can still matter: a fragment whose
// newest record is older ends its key's descent (thesis Algorithm 1).
// Tables and blocks with nothing that new, or nothing live at now, are
// skipped unread. fn gets the list key each record was found under.
func (st *Store) scan(c subscriptions.Cell, lists Lists, now, pubBound, subBound int64, fn func(l List, key []byte, r *Rec) error) error {
	bound := func(l List) int64 {
		if l == Pubs {
			return pubBound
		}
		return subBound
	}
	lowest := subBound
	if lists.Pubs && (!lists.Subs || pubBound < subBound) {
		lowest = pubBound
	}
	filters := []lsm.BlockPropertyFilter{timeFilter{newerThan: lowest, liveAt: now}}
	var ferr error
	var rec Rec
	visit := func(l List, f *lsm.Fragment) lsm.VisitDecision {
		b := bound(l)
		h, err := readHeader(f.Value)
		if err != nil {
			ferr = fmt.Errorf("list of cell %x: %w", f.Key, err)
			return lsm.VisitStop
		}
		if h.newest < b {
			return lsm.VisitSkipKey
		}
		old := false
		err = forEachIn(f.Value, &rec, func(r *Rec) bool {
			if r.T < b {
				old = true
				return false
			}
			if err := fn(l, f.Key, r); err != nil {
				ferr = err
				return false
			}
			return true
		})
		switch {
		case err != nil:
			ferr = fmt.Errorf("list of cell %x: %w", f.Key, err)
			return lsm.VisitStop
		case ferr != nil:
			return lsm.VisitStop
		case old:
			return lsm.VisitSkipKey
		}
		return lsm.VisitContinue
	}
	run := func(key, subtreeEnd []byte) error {
		if err := st.b.Visit(key, subtreeEnd, lists, filters, visit); err != nil {
			return err
		}
		return ferr
	}
	if st.cfg.Granularity == Fixed {
		keys, err := st.cellsFor(c)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := run(k, nil); err != nil {
				return err
			}
		}
		return nil
	}
	var subtreeEnd []byte
	if int64(len(c.ID)) < st.deepest[nsIndex(c.NS)].v.Load() {
		subtreeEnd = append([]byte{byte(c.NS)}, c.ID.SubtreeEnd()...)
	}
	if err := run(cellKey(c), subtreeEnd); err != nil {
		return err
	}
	for _, a := range c.ID.Ancestors() {
		if err := run(cellKey(subscriptions.Cell{NS: c.NS, ID: a}), nil); err != nil {
			return err
		}
	}
	return nil
}

// scanState is what one operation's scan remembers: cancels seen so far
// (each cancel is newer than its subscription, so it comes first), under
// fixed granularity records already taken from another leaf, and which of
// the operation's cells is being scanned (a cover has several). Both maps
// stay nil until needed; reading a nil map is fine.
type scanState struct {
	seen, cancelled map[int64]bool
	via             subscriptions.Cell
}

func (st *Store) newScanState() *scanState {
	sc := &scanState{}
	if st.cfg.Granularity == Fixed {
		sc.seen = map[int64]bool{}
	}
	return sc
}

// skip reports records an operation stamped now ignores: stamped at or
// after it (that operation reports the pair itself), expired, or taken.
func (sc *scanState) skip(r *Rec, now int64) bool {
	return r.T >= now || r.Tmax < now || sc.seen[r.T]
}

func (sc *scanState) cancel(ts int64) {
	if sc.cancelled == nil {
		sc.cancelled = map[int64]bool{}
	}
	sc.cancelled[ts] = true
}

func (sc *scanState) mark(t int64) {
	if sc.seen != nil {
		sc.seen[t] = true
	}
}
