package listdb

import (
	"fmt"
	"slices"

	"github.com/seed84792017/cellcast/dewey"
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
	return st.scanParts(c, true, true, lists, now, pubBound, subBound, fn)
}

// scanCells scans an operation's cells, each in turn as sc.via. A cover's
// cells share most of their ancestors: each ancestor is read once, via the
// first (smallest) of the cells below it, which is the one the canonical
// pair of any record found there names (subscriptions.Canonical: a pair
// with that ancestor as the other record's cell has the smallest own cell
// overlapping it), and not at all when one of the cells holds it in its
// subtree, which is read whole.
func (st *Store) scanCells(cells []subscriptions.Cell, sc *scanState, lists Lists, now, pubBound, subBound int64, fn func(l List, key []byte, r *Rec) error) error {
	if len(cells) == 1 || st.cfg.Granularity == Fixed {
		for _, sc.via = range cells {
			if err := st.scan(sc.via, lists, now, pubBound, subBound, fn); err != nil {
				return err
			}
		}
		return nil
	}
	for _, sc.via = range cells {
		if err := st.scanParts(sc.via, true, false, lists, now, pubBound, subBound, fn); err != nil {
			return err
		}
	}
	var done []dewey.ID // ancestors read; a cover's few dozen at most
	for _, c := range cells {
		for d := st.firstAncestor(c.NS); d < len(c.ID); d++ {
			a := c.ID[:d]
			if slices.ContainsFunc(done, a.Equal) || slices.ContainsFunc(cells, func(o subscriptions.Cell) bool { return o.NS == c.NS && o.ID.IsAncestorOrSelf(a) }) {
				continue
			}
			done = append(done, a)
			sc.via = c
			if err := st.scanParts(subscriptions.Cell{NS: c.NS, ID: a}, false, false, lists, now, pubBound, subBound, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// scanParts is scan's body: the cell itself, with its subtree when
// subtree, and its ancestors when ancestors (a cell's own key alone when
// neither).
func (st *Store) scanParts(c subscriptions.Cell, subtree, ancestors bool, lists Lists, now, pubBound, subBound int64, fn func(l List, key []byte, r *Rec) error) error {
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
	if subtree && int64(len(c.ID)) < st.deepest[nsIndex(c.NS)].v.Load() {
		subtreeEnd = append([]byte{byte(c.NS)}, c.ID.SubtreeEnd()...)
	}
	if err := run(cellKey(c), subtreeEnd); err != nil {
		return err
	}
	if !ancestors {
		return nil
	}
	for d := st.firstAncestor(c.NS); d < len(c.ID); d++ {
		if err := run(cellKey(subscriptions.Cell{NS: c.NS, ID: c.ID[:d]}), nil); err != nil {
			return err
		}
	}
	return nil
}

// firstAncestor is the depth of the shallowest ancestor a scan in ns
// reads: none above the shallowest cell ever written there.
func (st *Store) firstAncestor(ns subscriptions.Namespace) int {
	return int(max(1, min(st.shallowest[nsIndex(ns)].v.Load(), noCells)))
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

// newScanState starts the scan of an operation on cells. Under fixed
// granularity, or for a cover, the scan takes each record once, the first
// time it meets it, by its stamp (which names one record of a store): a
// record on a cover lies under several keys, and decoding it again at
// each, to find its canonical pair, was most of the cost of a cover.
func (st *Store) newScanState(cells []subscriptions.Cell) *scanState {
	sc := &scanState{}
	if st.cfg.Granularity == Fixed || len(cells) > 1 {
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
