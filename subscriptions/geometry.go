package subscriptions

import (
	"fmt"

	"github.com/seed84792017/cellcast/geo"
)

// Cells are the index, shapes the truth. A record made at a point, a
// circle or a polygon keeps its shape beside its cells, and a pair whose
// cells overlap matches only when their places truly meet:
//
//   - two shapes meet when they intersect (geo.Shape.Intersects);
//   - a shape and a record addressed by cell meet when the shape reaches
//     the region of one of that record's cells (a cell that is not a
//     cell of the world grid has no region: the cells alone decide);
//   - two records addressed by cell meet whenever their cells overlap,
//     as in the thesis.

// ErrShape is matched by errors about a request's shape; it wraps
// ErrBadRequest.
var ErrShape = fmt.Errorf("%w: bad shape", ErrBadRequest)

// Meets is the geometry part of the matching rule for two records, each
// a shape (nil when addressed by cell) and its cells.
func Meets(a *geo.Shape, ac []Cell, b *geo.Shape, bc []Cell) bool {
	switch {
	case a != nil && b != nil:
		return a.Intersects(b)
	case a != nil:
		return reachesCell(a, bc)
	case b != nil:
		return reachesCell(b, ac)
	}
	return true
}

func reachesCell(s *geo.Shape, cells []Cell) bool {
	for _, c := range cells {
		if c.NS == NSCell && s.IntersectsCell(c.ID) {
			return true
		}
	}
	return false
}

// meets is Meets for a publication and a subscription.
func meets(p *Publication, s *Subscription) bool {
	return placesMeet(p.Shape, p.Cell, p.Cover, s.Shape, s.Cell, s.Cover)
}

// PubsMeet is Meets for two publications: a self-join publish reports
// the recent publications whose places meet its own.
func PubsMeet(p, q *Publication) bool {
	return placesMeet(p.Shape, p.Cell, p.Cover, q.Shape, q.Cell, q.Cover)
}

// placesMeet is Meets for two records' shapes and cells, without building
// a one-cell record's cell list (a scan asks it of every candidate).
func placesMeet(a *geo.Shape, ac Cell, acv *Cover, b *geo.Shape, bc Cell, bcv *Cover) bool {
	switch {
	case a == nil && b == nil:
		return true
	case a != nil && b != nil:
		return a.Intersects(b)
	case a != nil:
		return reachesCellOf(a, bc, bcv)
	}
	return reachesCellOf(b, ac, acv)
}

func reachesCellOf(s *geo.Shape, cell Cell, cover *Cover) bool {
	if cover != nil {
		return reachesCell(s, cover.Cells)
	}
	return cell.NS == NSCell && s.IntersectsCell(cell.ID)
}

// checkShape refuses a shape beyond the configured bounds, or on cells
// outside the geo namespace.
func (l Limits) checkShape(s *geo.Shape, cells []Cell) error {
	if s == nil {
		return nil
	}
	for _, c := range cells {
		if c.NS != NSCell {
			return fmt.Errorf("%w: a shape lies on geo cells, not on %v", ErrShape, c)
		}
	}
	if s.Kind() == geo.Circle {
		if _, _, r := s.Circle(); r > l.MaxRadiusM {
			return fmt.Errorf("%w: radius_m %v above the limit of %v", ErrShape, r, l.MaxRadiusM)
		}
	}
	if s.Vertices() > l.MaxVertices {
		return fmt.Errorf("%w: polygon of %d vertices, limit %d", ErrShape, s.Vertices(), l.MaxVertices)
	}
	return nil
}
