package subscriptions

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/seed84792017/cellcast/dewey"
)

// A cover puts one subscription or publication on up to MaxCover cells (a
// circle across a cell border, on the few cells that cover it rather than
// on their large common ancestor). It stays one record with one id, stored
// at each of its cells, and carries the whole list, so either side of a
// pair can tell, from the two records alone, which of their overlapping
// cell pairs reports the match (Canonical): a scan that meets the other
// record through another pair skips it. That needs no shared set of pairs
// already reported, so it holds across shards too.

// MaxCover is the most cells a cover may have.
const MaxCover = 16

// ErrCover is matched by errors about a cover; it wraps ErrBadRequest.
var ErrCover = fmt.Errorf("%w: bad cover", ErrBadRequest)

// Cover lists the cells of a record that lies on more than one, sorted;
// the first is the record's Cell. Records hold it by pointer (nil: one
// cell): replies are slices of records, copied as they grow, so a wider
// record would slow the common one-cell case.
type Cover struct{ Cells []Cell }

// Compare orders cells as their store keys sort: by namespace, then in
// Dewey order.
func (c Cell) Compare(o Cell) int {
	if c.NS != o.NS {
		return cmp.Compare(c.NS, o.NS)
	}
	return dewey.Compare(c.ID, o.ID)
}

// Cells returns the subscription's cells: its cover, or its one cell.
func (s *Subscription) Cells() []Cell {
	if s.Cover != nil {
		return s.Cover.Cells
	}
	return []Cell{s.Cell}
}

// Cells returns the publication's cells: its cover, or its one cell.
func (p *Publication) Cells() []Cell {
	if p.Cover != nil {
		return p.Cover.Cells
	}
	return []Cell{p.Cell}
}

// overlapsAny is the hierarchy part of the matching rule for records with
// covers: some cell of one overlaps some cell of the other. A nil cover
// stands for the record's one cell.
func overlapsAny(a Cell, ac *Cover, b Cell, bc *Cover) bool {
	if ac == nil && bc == nil {
		return a.Overlaps(b)
	}
	as, bs := []Cell{a}, []Cell{b}
	if ac != nil {
		as = ac.Cells
	}
	if bc != nil {
		bs = bc.Cells
	}
	return cellsOverlap(as, bs)
}

func cellsOverlap(ac, bc []Cell) bool {
	if isSorted(ac) && isSorted(bc) {
		// In Dewey order a cell's subtree follows it at once: a cell that
		// is not an ancestor of the next cell of the other list is not one
		// of any later cell either, so a merge finds every overlap.
		i, j := 0, 0
		for i < len(ac) && j < len(bc) {
			if ac[i].Overlaps(bc[j]) {
				return true
			}
			if ac[i].Compare(bc[j]) < 0 {
				i++
			} else {
				j++
			}
		}
		return false
	}
	for _, x := range ac {
		for _, y := range bc {
			if x.Overlaps(y) {
				return true
			}
		}
	}
	return false
}

func isSorted(cs []Cell) bool {
	for i := 1; i < len(cs); i++ {
		if cs[i-1].Compare(cs[i]) > 0 {
			return false
		}
	}
	return true
}

// Canonical reports whether the pair of cells (via a of the first record,
// whose cells are ac, and via b of the second, cells bc) is the one
// through which a match of the two records is reported: of all their
// overlapping pairs, the smallest by (first cell, second cell) in Compare
// order. Callers put the publication first, so both sides of a pair
// agree. Two records of one cell each have only one pair.
func Canonical(ac, bc []Cell, a, b Cell) bool {
	if len(ac) <= 1 && len(bc) <= 1 {
		return true
	}
	// (a, b) is the smallest overlapping pair when a and b overlap, no
	// smaller first cell overlaps any second one, and no second cell
	// smaller than b overlaps a.
	if !a.Overlaps(b) {
		return false
	}
	for _, x := range ac {
		if x.Compare(a) >= 0 {
			continue
		}
		for _, y := range bc {
			if x.Overlaps(y) {
				return false
			}
		}
	}
	for _, y := range bc {
		if y.Compare(b) < 0 && a.Overlaps(y) {
			return false
		}
	}
	return true
}

// checkCover validates an operation's cells: cell alone when cover is
// empty, otherwise the cover's cells (order and repeats do not matter),
// which it returns sorted, with the first as the record's cell; a cover
// of one cell is that cell.
func (l Limits) checkCover(cell Cell, cover []Cell) (Cell, *Cover, error) {
	if len(cover) == 0 {
		return cell, nil, l.checkCell(cell)
	}
	if len(cover) > MaxCover {
		return Cell{}, nil, fmt.Errorf("%w: %d cells, limit %d", ErrCover, len(cover), MaxCover)
	}
	cs := slices.Clone(cover)
	slices.SortFunc(cs, Cell.Compare)
	cs = slices.CompactFunc(cs, func(a, b Cell) bool { return a.Compare(b) == 0 })
	for _, c := range cs {
		if err := l.checkCell(c); err != nil {
			return Cell{}, nil, err
		}
	}
	if len(cs) == 1 {
		return cs[0], nil, nil
	}
	return cs[0], &Cover{Cells: cs}, nil
}
