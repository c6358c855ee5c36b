package secondary

import (
	"bytes"
	"encoding/binary"

	"github.com/seed84792017/cellcast/lsm"
)

// DELI (Tang et al.) appends index entries and never reads to write them.
// An entry's key is the value's encoding, the row's sequence number
// inverted (so a value's entries run newest first) and the primary key;
// its value is empty. Stale entries are repaired twice over: when the
// primary table's compaction drops a shadowed row version, the entries
// that pointed at it are deleted (lsm.Options.OnShadowed); and a lookup
// that meets a stale entry deletes it.

func deliKey(v Value, seq uint64, pk string) []byte {
	b := v.appendKey(nil)
	b = binary.BigEndian.AppendUint64(b, ^seq)
	return append(b, pk...)
}

// parseDeliKey splits an entry's key after the value's encoding.
func parseDeliKey(t Type, key []byte) (posting, error) {
	_, rest, err := decodeKey(t, key)
	if err != nil || len(rest) < 8 {
		return posting{}, errCorrupt
	}
	return posting{seq: ^binary.BigEndian.Uint64(rest), pk: string(rest[8:])}, nil
}

// shadowed deletes the DELI entries of a row version the primary table's
// compaction dropped.
func (t *Table) shadowed(key, value []byte) {
	deli := t.deli.Load()
	if deli == nil || !bytes.HasPrefix(key, []byte("r/")) {
		return
	}
	seq, doc, err := decodeDoc(value)
	if err != nil {
		return
	}
	pk := string(key[2:])
	for _, ix := range *deli {
		if v, ok := doc[ix.Name]; ok && v.Type == ix.Type {
			// A failed delete leaves a stale entry, which reads repair.
			ix.db.Delete(deliKey(v, seq, pk), lsm.NoSync)
			t.repaired.Add(1)
		}
	}
}

// deliScan reads entries in [lo, hi) in key order, validates them, keeps
// the k newest valid rows, and deletes the stale entries it met. For one
// value (newest first) it stops once k rows are found.
func (ix *index) deliScan(t *Table, lo, hi []byte, k int, point bool) ([]Row, error) {
	it, err := ix.db.NewIter(&lsm.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, err
	}
	var cands []posting
	var out []Row
	var stale [][]byte
	for ok := it.First(); ok; ok = it.Next() {
		p, err := parseDeliKey(ix.Type, it.Key())
		if err != nil {
			it.Close()
			return nil, err
		}
		if !point {
			cands = append(cands, p)
			continue
		}
		r, err := t.valid(p)
		if err != nil {
			it.Close()
			return nil, err
		}
		if r == nil {
			stale = append(stale, append([]byte(nil), it.Key()...))
			continue
		}
		if out = append(out, *r); k > 0 && len(out) == k {
			break
		}
	}
	err = it.Error()
	it.Close()
	if err != nil {
		return nil, err
	}
	if !point {
		if out, err = t.topK(cands, k, nil); err != nil {
			return nil, err
		}
	}
	for _, key := range stale {
		if err := ix.db.Delete(key, lsm.NoSync); err != nil {
			return nil, err
		}
		t.repaired.Add(1)
	}
	return out, nil
}
