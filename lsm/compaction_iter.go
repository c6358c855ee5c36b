package lsm

import (
	"bytes"
	"sort"

	"github.com/seed84792017/cellcast/lsm/internal/base"
)

// compactionIter turns a merged input stream into the entries a flush or
// compaction writes. Per user key it keeps, for every snapshot stripe, only
// the newest entry, folding Merge fragments (newer first) into one. A stripe
// is the set of sequence numbers that look the same to every live snapshot:
// entries newer than the newest snapshot form the top stripe.
//
// Rules that keep reads correct:
//   - A run of fragments that reached a Set or Delete becomes a Set.
//   - A run that reached neither stays a Merge, unless nothing older exists
//     anywhere below (isBase), when it becomes a Set.
//   - A Delete is elided only when it is the key's oldest entry here and
//     nothing below holds the key.
//   - The compaction filter sees only top-stripe entries (no snapshot can
//     see them). Removing a Merge drops it; removing a Set leaves a Delete if
//     anything older could resurface.
//   - With zeroSeqs, a Set in the oldest stripe whose key nothing below
//     holds is written with sequence number 0: every snapshot sees it
//     already, and every other version of its key is newer. Never in L0,
//     whose tables are ordered by their sequence numbers.
type compactionIter struct {
	in        internalIterator
	merger    *Merger
	filter    CompactionFilter
	shadowed  func(key, value []byte) // Options.OnShadowed
	level     int
	snapshots []uint64 // ascending
	isBase    func(userKey []byte) bool
	zeroSeqs  bool // only for output levels below L0

	// filterTouched records whether the filter changed anything; an
	// install that races with a new snapshot must then be redone.
	filterTouched bool

	entries []cEntry
	// scratch holds copies of the current key's values: compaction inputs
	// reuse their block buffers as they move.
	scratch []byte
	out     []cEntry
	outPos  int
	key     []byte
	err     error
	// Counters for metrics.
	dropped int64
}

type cEntry struct {
	trailer uint64
	value   []byte
}

func (c *compactionIter) stripe(seq uint64) int {
	return sort.Search(len(c.snapshots), func(i int) bool { return c.snapshots[i] >= seq })
}

// first positions at the first output entry.
func (c *compactionIter) first() bool {
	c.in.First()
	return c.fill()
}

// next moves to the next output entry; false at the end or on error.
func (c *compactionIter) next() bool {
	c.outPos++
	if c.outPos < len(c.out) {
		return true
	}
	return c.fill()
}

func (c *compactionIter) current() (base.InternalKey, []byte) {
	e := c.out[c.outPos]
	return base.InternalKey{UserKey: c.key, Trailer: e.trailer}, e.value
}

// fill gathers the next user key's entries and computes its outputs.
func (c *compactionIter) fill() bool {
	for {
		c.out, c.outPos = c.out[:0], 0
		if !c.in.Valid() {
			c.err = c.in.Error()
			return false
		}
		k := c.in.Key()
		c.key = append(c.key[:0], k.UserKey...)
		c.entries = c.entries[:0]
		c.scratch = c.scratch[:0]
		for c.in.Valid() && bytes.Equal(c.in.Key().UserKey, c.key) {
			v := c.in.Value()
			c.entries = append(c.entries, cEntry{c.in.Key().Trailer, nil})
			c.scratch = append(c.scratch, v...)
			c.entries[len(c.entries)-1].value = c.scratch[len(c.scratch)-len(v):]
			c.in.Next()
		}
		// scratch may have moved while growing; re-slice every value.
		off := len(c.scratch)
		for i := len(c.entries) - 1; i >= 0; i-- {
			n := len(c.entries[i].value)
			off -= n
			c.entries[i].value = c.scratch[off : off+n : off+n]
		}
		if err := c.in.Error(); err != nil {
			c.err = err
			return false
		}
		if err := c.process(); err != nil {
			c.err = err
			return false
		}
		if len(c.out) > 0 {
			return true
		}
	}
}

func (c *compactionIter) process() error {
	top := len(c.snapshots)
	base_ := -1 // computed lazily: whether lower levels lack the key
	isBase := func() bool {
		if base_ < 0 {
			base_ = 0
			if c.isBase(c.key) {
				base_ = 1
			}
		}
		return base_ == 1
	}
	es := c.entries
	for i := 0; i < len(es); {
		e := es[i]
		s := c.stripe(e.trailer >> 8)
		j := i + 1
		kind := base.Kind(e.trailer & 0xff)
		out := e
		switch kind {
		case base.KindMerge:
			ops := [][]byte{e.value}
			reachedBase, hasBaseValue := false, false
			for ; j < len(es) && c.stripe(es[j].trailer>>8) == s; j++ {
				k := base.Kind(es[j].trailer & 0xff)
				if k == base.KindMerge {
					ops = append(ops, es[j].value)
					continue
				}
				reachedBase = true
				if k == base.KindSet {
					ops = append(ops, es[j].value)
					hasBaseValue = true
				}
				j++
				break
			}
			olderHere := nextStripeStart(c, es, j, s) < len(es)
			if reachedBase || (!olderHere && isBase()) {
				kind = base.KindSet
			}
			if len(ops) > 1 || hasBaseValue {
				v, err := c.merger.Merge(c.key, ops, hasBaseValue)
				if err != nil {
					return err
				}
				out.value = v
			}
			out.trailer = base.MakeTrailer(e.trailer>>8, kind)
		}
		end := nextStripeStart(c, es, j, s)
		if c.shadowed != nil {
			for _, h := range es[j:end] {
				if base.Kind(h.trailer&0xff) == base.KindSet {
					c.shadowed(c.key, h.value)
				}
			}
		}
		j = end
		olderHere := j < len(es)
		if kind == base.KindDelete {
			if olderHere || !isBase() {
				c.out = append(c.out, out)
			} else {
				c.dropped++
			}
			i = j
			continue
		}
		if s == top && c.filter != nil {
			switch d, nv := c.filter.Filter(c.level, c.key, kind, out.value); d {
			case FilterChange:
				out.value = nv
				c.filterTouched = true
			case FilterRemove:
				c.filterTouched = true
				c.dropped++
				if kind == base.KindSet && (olderHere || !isBase()) {
					c.out = append(c.out, cEntry{trailer: base.MakeTrailer(e.trailer>>8, base.KindDelete)})
				}
				i = j
				continue
			}
		}
		if c.zeroSeqs && s == 0 && kind == base.KindSet && isBase() {
			out.trailer = base.MakeTrailer(0, kind)
		}
		c.out = append(c.out, out)
		i = j
	}
	return nil
}

// nextStripeStart returns the index of the first entry at or after j that
// lies in an older stripe than s.
func nextStripeStart(c *compactionIter, es []cEntry, j, s int) int {
	for j < len(es) && c.stripe(es[j].trailer>>8) == s {
		j++
	}
	return j
}
