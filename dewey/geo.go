package dewey

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// BBox is a latitude/longitude rectangle in degrees.
type BBox struct {
	MinLat, MaxLat, MinLng, MaxLng float64
}

// NewYorkState is the default bounding box of the quad tree.
var NewYorkState = BBox{MinLat: 40.49, MaxLat: 45.02, MinLng: -79.77, MaxLng: -71.85}

// Errors of the geo mappers.
var (
	ErrOutOfBounds = errors.New("dewey: coordinates outside the bounding box")
	ErrBadDepth    = errors.New("dewey: depth outside the tree's range")
	ErrNotInTree   = errors.New("dewey: id is not a cell of this tree")
	ErrBadRadius   = errors.New("dewey: radius must be positive and finite")
	ErrBadBox      = errors.New("dewey: bounding box is empty or not finite")
)

// Contains reports whether the point lies in the box (edges included).
func (b BBox) Contains(lat, lng float64) bool {
	return lat >= b.MinLat && lat <= b.MaxLat && lng >= b.MinLng && lng <= b.MaxLng
}

// ContainsBox reports whether o lies inside b.
func (b BBox) ContainsBox(o BBox) bool {
	return o.MinLat >= b.MinLat && o.MaxLat <= b.MaxLat && o.MinLng >= b.MinLng && o.MaxLng <= b.MaxLng
}

func (b BBox) valid() bool {
	for _, v := range []float64{b.MinLat, b.MaxLat, b.MinLng, b.MaxLng} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return b.MinLat < b.MaxLat && b.MinLng < b.MaxLng && b.MinLat >= -90 && b.MaxLat <= 90
}

// child returns quadrant q (1 = north-west, 2 = north-east, 3 = south-west,
// 4 = south-east).
func (b BBox) child(q uint32) BBox {
	midLat, midLng := (b.MinLat+b.MaxLat)/2, (b.MinLng+b.MaxLng)/2
	c := b
	if q <= 2 {
		c.MinLat = midLat
	} else {
		c.MaxLat = midLat
	}
	if q%2 == 0 {
		c.MinLng = midLng
	} else {
		c.MaxLng = midLng
	}
	return c
}

// quadrant returns the child of b holding the point; points on a midline go
// north and east.
func (b BBox) quadrant(lat, lng float64) uint32 {
	q := uint32(1)
	if lat < (b.MinLat+b.MaxLat)/2 {
		q += 2
	}
	if lng >= (b.MinLng+b.MaxLng)/2 {
		q++
	}
	return q
}

// QuadTree maps the plane onto Dewey ids. The root "1" is the whole box;
// each further component picks a quadrant: 1 north-west, 2 north-east,
// 3 south-west, 4 south-east. A cell of depth d has d components.
type QuadTree struct {
	box      BBox
	maxDepth int
}

// MaxGeoDepth is the deepest quad tree cell (16 components).
const MaxGeoDepth = 16

// NewQuadTree returns a tree over box with cells down to maxDepth.
func NewQuadTree(box BBox, maxDepth int) (*QuadTree, error) {
	if !box.valid() {
		return nil, ErrBadBox
	}
	if maxDepth < 1 || maxDepth > MaxGeoDepth {
		return nil, fmt.Errorf("%w: %d not in 1…%d", ErrBadDepth, maxDepth, MaxGeoDepth)
	}
	return &QuadTree{box: box, maxDepth: maxDepth}, nil
}

// Box is the tree's bounding box.
func (q *QuadTree) Box() BBox { return q.box }

// MaxDepth is the deepest cell.
func (q *QuadTree) MaxDepth() int { return q.maxDepth }

// Root is the cell covering the whole box.
func (q *QuadTree) Root() ID { return ID{1} }

func finite(vs ...float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// Cell returns the cell of the given depth holding the point.
func (q *QuadTree) Cell(lat, lng float64, depth int) (ID, error) {
	if depth < 1 || depth > q.maxDepth {
		return nil, fmt.Errorf("%w: %d not in 1…%d", ErrBadDepth, depth, q.maxDepth)
	}
	if !finite(lat, lng) || !q.box.Contains(lat, lng) {
		return nil, fmt.Errorf("%w: (%g, %g)", ErrOutOfBounds, lat, lng)
	}
	id := make(ID, 1, depth)
	id[0] = 1
	b := q.box
	for len(id) < depth {
		c := b.quadrant(lat, lng)
		id = append(id, c)
		b = b.child(c)
	}
	return id, nil
}

// Check reports whether id is a cell of this tree.
func (q *QuadTree) Check(id ID) error {
	if len(id) == 0 || len(id) > q.maxDepth || id[0] != 1 {
		return fmt.Errorf("%w: %v", ErrNotInTree, id)
	}
	for _, c := range id[1:] {
		if c < 1 || c > 4 {
			return fmt.Errorf("%w: %v", ErrNotInTree, id)
		}
	}
	return nil
}

// CellBox returns a cell's rectangle.
func (q *QuadTree) CellBox(id ID) (BBox, error) {
	if err := q.Check(id); err != nil {
		return BBox{}, err
	}
	b := q.box
	for _, c := range id[1:] {
		b = b.child(c)
	}
	return b, nil
}

// SmallestContaining returns the deepest cell holding the whole box (the
// part of it inside the tree).
func (q *QuadTree) SmallestContaining(o BBox) ID {
	id := ID{1}
	b := q.box
	for len(id) < q.maxDepth {
		c := b.quadrant((o.MinLat+o.MaxLat)/2, (o.MinLng+o.MaxLng)/2)
		cb := b.child(c)
		if !cb.ContainsBox(o) {
			break
		}
		id, b = append(id, c), cb
	}
	return id
}

const metresPerDegree = 111_320.0

// circleBox is the rectangle around a circle, in the equirectangular
// approximation that is plenty at city scale.
func circleBox(lat, lng, radiusM float64) BBox {
	dLat := radiusM / metresPerDegree
	dLng := radiusM / (metresPerDegree * math.Max(math.Cos(lat*math.Pi/180), 1e-6))
	return BBox{MinLat: lat - dLat, MaxLat: lat + dLat, MinLng: lng - dLng, MaxLng: lng + dLng}
}

// distanceToBox is the distance in metres from the point to the nearest
// point of b (0 inside).
func distanceToBox(lat, lng float64, b BBox) float64 {
	cl := math.Max(b.MinLat, math.Min(lat, b.MaxLat))
	cg := math.Max(b.MinLng, math.Min(lng, b.MaxLng))
	dy := (lat - cl) * metresPerDegree
	dx := (lng - cg) * metresPerDegree * math.Cos(lat*math.Pi/180)
	return math.Hypot(dx, dy)
}

func (q *QuadTree) checkCircle(lat, lng, radiusM float64) error {
	if !finite(lat, lng) || !q.box.Contains(lat, lng) {
		return fmt.Errorf("%w: (%g, %g)", ErrOutOfBounds, lat, lng)
	}
	if !finite(radiusM) || radiusM <= 0 {
		return fmt.Errorf("%w: %g", ErrBadRadius, radiusM)
	}
	return nil
}

// CircleCell returns the smallest cell containing the circle (thesis 4.7).
// The centre must lie in the tree's box; a circle reaching past the box
// maps to the root.
func (q *QuadTree) CircleCell(lat, lng, radiusM float64) (ID, error) {
	if err := q.checkCircle(lat, lng, radiusM); err != nil {
		return nil, err
	}
	return q.SmallestContaining(circleBox(lat, lng, radiusM)), nil
}

// CircleCover returns at most k cells (k ≥ 1) that together cover the
// circle with less wasted area than the one containing cell: starting from
// that cell, it repeatedly splits the largest cell into its children that
// meet the circle while the cover stays within k cells. Cells come back in
// Dewey order.
func (q *QuadTree) CircleCover(lat, lng, radiusM float64, k int) ([]ID, error) {
	if k < 1 {
		return nil, fmt.Errorf("dewey: cover size %d must be at least 1", k)
	}
	start, err := q.CircleCell(lat, lng, radiusM)
	if err != nil {
		return nil, err
	}
	cover := []ID{start}
	for {
		// Split the shallowest (largest) cell first.
		best := -1
		for i, c := range cover {
			if len(c) < q.maxDepth && (best < 0 || len(c) < len(cover[best])) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		cell := cover[best]
		b, _ := q.CellBox(cell)
		var kids []ID
		for c := uint32(1); c <= 4; c++ {
			if distanceToBox(lat, lng, b.child(c)) <= radiusM {
				kids = append(kids, cell.Child(c))
			}
		}
		if len(cover)-1+len(kids) > k {
			break
		}
		cover = append(append(cover[:best:best], cover[best+1:]...), kids...)
	}
	sort.Slice(cover, func(i, j int) bool { return Compare(cover[i], cover[j]) < 0 })
	return cover, nil
}

// Leaves returns every descendant of id at the given depth (id itself if
// depth equals its own): the fixed-granularity expansion. It refuses more
// than limit cells.
func (q *QuadTree) Leaves(id ID, depth, limit int) ([]ID, error) {
	if err := q.Check(id); err != nil {
		return nil, err
	}
	if depth > q.maxDepth {
		return nil, fmt.Errorf("%w: %d", ErrBadDepth, depth)
	}
	return Leaves(id, depth, limit)
}

// Leaves returns every descendant of id at the given depth in a tree of
// four children a cell (a quad tree's, or S2's below its faces): id
// itself if depth is its own. It refuses more than limit cells.
func Leaves(id ID, depth, limit int) ([]ID, error) {
	if len(id) == 0 || depth < len(id) {
		return nil, fmt.Errorf("%w: %d", ErrBadDepth, depth)
	}
	if depth-len(id) > 15 || 1<<(2*(depth-len(id))) > limit {
		return nil, fmt.Errorf("dewey: %v has %d cells at depth %d, limit %d", id, 1<<(2*min(depth-len(id), 31)), depth, limit)
	}
	out := []ID{append(ID(nil), id...)}
	for d := len(id); d < depth; d++ {
		next := make([]ID, 0, len(out)*4)
		for _, c := range out {
			for q := uint32(1); q <= 4; q++ {
				next = append(next, c.Child(q))
			}
		}
		out = next
	}
	return out, nil
}

// Compare orders ids the way their encodings sort: -1, 0 or +1 (or a
// length difference) as a sorts before, with or after b.
func Compare(a, b ID) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		switch {
		case a[i] < b[i]:
			return -1
		case a[i] > b[i]:
			return 1
		}
	}
	return len(a) - len(b)
}

// Grid is the flat rows × cols grid of the thesis experiments (500 × 500):
// each cell is a one-component id row·cols + col + 1, so no cell is another's
// ancestor.
type Grid struct {
	box        BBox
	rows, cols int
}

// NewGrid returns a grid over box.
func NewGrid(box BBox, rows, cols int) (*Grid, error) {
	if !box.valid() {
		return nil, ErrBadBox
	}
	if rows < 1 || cols < 1 || rows*cols > math.MaxUint32-1 {
		return nil, fmt.Errorf("dewey: grid of %d×%d cells", rows, cols)
	}
	return &Grid{box: box, rows: rows, cols: cols}, nil
}

// Cells is the number of cells.
func (g *Grid) Cells() int { return g.rows * g.cols }

// Cell returns the cell holding the point.
func (g *Grid) Cell(lat, lng float64) (ID, error) {
	if !finite(lat, lng) || !g.box.Contains(lat, lng) {
		return nil, fmt.Errorf("%w: (%g, %g)", ErrOutOfBounds, lat, lng)
	}
	row := int((lat - g.box.MinLat) / (g.box.MaxLat - g.box.MinLat) * float64(g.rows))
	col := int((lng - g.box.MinLng) / (g.box.MaxLng - g.box.MinLng) * float64(g.cols))
	row, col = min(row, g.rows-1), min(col, g.cols-1)
	return ID{uint32(row*g.cols + col + 1)}, nil
}

// CellBox returns a grid cell's rectangle.
func (g *Grid) CellBox(id ID) (BBox, error) {
	if len(id) != 1 || id[0] < 1 || int(id[0]) > g.Cells() {
		return BBox{}, fmt.Errorf("%w: %v", ErrNotInTree, id)
	}
	n := int(id[0]) - 1
	row, col := n/g.cols, n%g.cols
	h := (g.box.MaxLat - g.box.MinLat) / float64(g.rows)
	w := (g.box.MaxLng - g.box.MinLng) / float64(g.cols)
	return BBox{
		MinLat: g.box.MinLat + float64(row)*h, MaxLat: g.box.MinLat + float64(row+1)*h,
		MinLng: g.box.MinLng + float64(col)*w, MaxLng: g.box.MinLng + float64(col+1)*w,
	}, nil
}
