package secondary

import (
	"errors"

	"github.com/seed84792017/cellcast/lsm"
)

// Eager and Lazy keep one posting list per value, keyed by the value's
// encoding; Composite one key per entry: the value's encoding, then the
// primary key, holding the sequence number.

// add files a new entry.
func (ix *index) add(v Value, p posting, o *lsm.WriteOptions) error {
	key := v.appendKey(nil)
	switch ix.Strategy {
	case Eager:
		list, err := ix.db.Get(key)
		if err != nil && !errors.Is(err, lsm.ErrNotFound) {
			return err
		}
		// Newest first: the new entry goes in front.
		return ix.db.Set(key, append(appendPosting(nil, p), list...), o)
	case Lazy:
		return ix.db.Merge(key, appendPosting(nil, p), o)
	case DELI:
		return ix.db.Set(deliKey(v, p.seq, p.pk), nil, o)
	default:
		return ix.db.Set(append(key, p.pk...), appendPosting(nil, posting{seq: p.seq}), o)
	}
}

// remove takes an entry out of an Eager or Lazy list (a Lazy value read
// back is its fragments merged, and the list written replaces them).
func (ix *index) remove(v Value, p posting, o *lsm.WriteOptions) error {
	key := v.appendKey(nil)
	list, err := ix.db.Get(key)
	if errors.Is(err, lsm.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var kept []byte
	if err := decodePostings(list, func(q posting) bool {
		if q != p {
			kept = appendPosting(kept, q)
		}
		return true
	}); err != nil {
		return err
	}
	if len(kept) == 0 {
		return ix.db.Delete(key, o)
	}
	return ix.db.Set(key, kept, o)
}

func (ix *index) lookup(t *Table, v Value, k int) ([]Row, error) {
	key := v.appendKey(nil)
	switch ix.Strategy {
	case Eager:
		list, err := ix.db.Get(key)
		if errors.Is(err, lsm.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return t.validNewestFirst(list, k)
	case Lazy:
		return ix.lazyLookup(t, key, k)
	case DELI:
		return ix.deliScan(t, key, prefixEnd(key), k, true)
	}
	return ix.scan(t, key, prefixEnd(key), k)
}

// lazyLookup reads the value's fragments newest first, level by level,
// validating as it goes, and stops once k rows are found: older
// fragments are never read (the study's early termination).
func (ix *index) lazyLookup(t *Table, key []byte, k int) ([]Row, error) {
	var out []Row
	seen := map[posting]bool{}
	var ferr error
	err := ix.db.VisitKey(key, nil, func(f *lsm.Fragment) lsm.VisitDecision {
		if f.Kind == lsm.KindDelete {
			return lsm.VisitSkipKey
		}
		ferr = decodePostings(f.Value, func(p posting) bool {
			if seen[p] {
				return true
			}
			seen[p] = true
			r, err := t.valid(p)
			if err != nil {
				ferr = err
				return false
			}
			if r != nil {
				out = append(out, *r)
			}
			return k == 0 || len(out) < k
		})
		if ferr != nil || (k > 0 && len(out) >= k) {
			return lsm.VisitStop
		}
		return lsm.VisitContinue
	})
	if err == nil {
		err = ferr
	}
	return out, err
}

// validNewestFirst validates a list already newest first.
func (t *Table) validNewestFirst(list []byte, k int) ([]Row, error) {
	var cands []posting
	if err := decodePostings(list, func(p posting) bool { cands = append(cands, p); return true }); err != nil {
		return nil, err
	}
	return t.topK(cands, k, nil)
}

func (ix *index) rangeLookup(t *Table, a, b Value, k int) ([]Row, error) {
	lo := a.appendKey(nil)
	hi := prefixEnd(b.appendKey(nil))
	if ix.Strategy == DELI {
		return ix.deliScan(t, lo, hi, k, false)
	}
	return ix.scan(t, lo, hi, k)
}

// scan gathers every entry with a key in [lo, hi) and keeps the k newest
// valid ones.
func (ix *index) scan(t *Table, lo, hi []byte, k int) ([]Row, error) {
	it, err := ix.db.NewIter(&lsm.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var cands []posting
	for ok := it.First(); ok; ok = it.Next() {
		if ix.Strategy == Composite {
			_, pk, err := decodeKey(ix.Type, it.Key())
			if err != nil {
				return nil, err
			}
			if err := decodePostings(it.Value(), func(p posting) bool {
				cands = append(cands, posting{p.seq, string(pk)})
				return false
			}); err != nil {
				return nil, err
			}
			continue
		}
		if err := decodePostings(it.Value(), func(p posting) bool { cands = append(cands, p); return true }); err != nil {
			return nil, err
		}
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	return t.topK(cands, k, nil)
}

// prefixEnd is the least key above every key starting with p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil // p is all 0xff: no upper bound
}
