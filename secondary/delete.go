package secondary

import (
	"encoding/binary"
	"errors"

	"github.com/seed84792017/cellcast/lsm"
)

// Delete removes pk's row; ErrNotFound if there is none.
func (t *Table) Delete(pk string) error {
	n, err := t.DeleteMany([]string{pk})
	if err == nil && n == 0 {
		_, err = t.Get(pk) // ErrNotFound, naming pk
	}
	return err
}

// DeleteMany removes the rows of pks that exist and returns how many. It
// writes once to the primary table and once to each stand-alone index,
// so with Config.Sync a thousand rows cost a handful of fsyncs, not a
// thousand times that (the catalog's janitor deletes expired publications
// this way).
func (t *Table) DeleteMany(pks []string) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var olds []*Row
	seen := map[string]bool{}
	b := lsm.NewBatch()
	for _, pk := range pks {
		if pk == "" {
			return 0, ErrBadKey
		}
		if seen[pk] {
			continue
		}
		seen[pk] = true
		old, err := t.get(pk)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return 0, err
		}
		b.Delete(rowKey(pk))
		olds = append(olds, old)
	}
	return t.deleteRows(b, olds)
}

// DeleteRange removes the rows RangeLookup(attr, a, b, k) finds and
// returns how many, in writes as DeleteMany's. Writes wait meanwhile, so
// the rows the lookup read are current and need no second read (the
// catalog's janitor deletes expired publications this way).
func (t *Table) DeleteRange(attr string, a, b Value, k int) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rows, err := t.RangeLookup(attr, a, b, k)
	if err != nil {
		return 0, err
	}
	batch := lsm.NewBatch()
	olds := make([]*Row, len(rows))
	for i := range rows {
		batch.Delete(rowKey(rows[i].Key))
		olds[i] = &rows[i]
	}
	return t.deleteRows(batch, olds)
}

// deleteRows applies b, which deletes the rows olds, with the table's
// next sequence number, and takes their index entries out. t.mu is held.
func (t *Table) deleteRows(b *lsm.Batch, olds []*Row) (int, error) {
	if len(olds) == 0 {
		return 0, nil
	}
	t.seq++
	b.Set(seqKey, binary.LittleEndian.AppendUint64(nil, t.seq))
	if err := t.primary.Apply(b, t.writeOptions()); err != nil {
		return 0, err
	}
	return len(olds), t.forget(olds)
}

// forget takes deleted rows' entries out of every stand-alone index, so
// a table whose rows come and go (expiring publications) does not grow
// with entries nothing can return: lists are rewritten without them
// (Eager, Lazy: each list once however many of the rows it holds),
// single entries deleted blind (Composite, DELI). One batch per index.
func (t *Table) forget(olds []*Row) error {
	for _, ix := range t.indexes {
		if ix.db == nil {
			continue
		}
		b := lsm.NewBatch()
		drop := map[string]map[posting]bool{} // Eager, Lazy: list key -> postings to drop
		for _, old := range olds {
			v, ok := old.Doc[ix.Name]
			if !ok {
				continue
			}
			switch ix.Strategy {
			case Eager, Lazy:
				k := string(v.appendKey(nil))
				if drop[k] == nil {
					drop[k] = map[posting]bool{}
				}
				drop[k][posting{old.Seq, old.Key}] = true
			case Composite:
				b.Delete(append(v.appendKey(nil), old.Key...))
			case DELI:
				b.Delete(deliKey(v, old.Seq, old.Key))
			}
		}
		for k, ps := range drop {
			list, err := ix.db.Get([]byte(k))
			if errors.Is(err, lsm.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			var kept []byte
			if err := decodePostings(list, func(q posting) bool {
				if !ps[q] {
					kept = appendPosting(kept, q)
				}
				return true
			}); err != nil {
				return err
			}
			if len(kept) == 0 {
				b.Delete([]byte(k))
			} else {
				b.Set([]byte(k), kept)
			}
		}
		if b.Empty() {
			continue
		}
		if err := ix.db.Apply(b, t.writeOptions()); err != nil {
			return err
		}
	}
	return nil
}
