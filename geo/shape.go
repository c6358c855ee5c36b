package geo

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"

	"github.com/seed84792017/cellcast/dewey"
)

// Kind is a shape's form.
type Kind uint8

const (
	Circle  Kind = 1 // a spherical cap; a point is one of radius 0
	Polygon Kind = 2 // one or more polygons, each a shell and its holes
)

// LatLng is a position in degrees.
type LatLng struct{ Lat, Lng float64 }

// Rings is one polygon: its shell first, then its holes. A ring lists
// its vertices once each (GeoJSON's closing repeat of the first is not
// kept); its edges are the shorter great-circle arcs between them.
type Rings [][]LatLng

// Hard limits, whatever a broker configures: they bound the work one
// shape can ask of the broker.
const (
	// MaxVertices bounds the vertices of a shape, all rings together.
	MaxVertices = 4096
	// MaxRadiusM bounds a circle's radius: a quarter of the Earth's
	// circumference, so a cap is never more than a hemisphere.
	MaxRadiusM = math.Pi / 2 * EarthRadiusM
)

// ErrShape is matched by every error about a shape's geometry.
var ErrShape = errors.New("geo: bad shape")

// shapeErr names what is wrong with a shape.
func shapeErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrShape, fmt.Sprintf(format, args...))
}

// Shape is a circle or a set of polygons on the sphere. The zero Shape is
// not valid; make one with NewCircle, NewPolygons or DecodeShape.
type Shape struct {
	kind Kind
	// A circle's centre and radius as given, and on the sphere.
	lat, lng, radiusM float64
	center            s2.Point
	radius            s1.Angle
	cap               s2.Cap
	// A polygon's rings as given; their S2 form is built on first use.
	polys    []Rings
	once     sync.Once
	regions  []*s2.Polygon
	vertices int
}

// NewCircle returns the circle of radiusM metres (0: the point itself)
// around lat, lng.
func NewCircle(lat, lng, radiusM float64) (*Shape, error) {
	if err := CheckLatLng(lat, lng); err != nil {
		return nil, err
	}
	if !(radiusM >= 0 && radiusM <= MaxRadiusM) {
		return nil, shapeErr("radius %v m not in 0…%.0f", radiusM, MaxRadiusM)
	}
	return circle(lat, lng, radiusM), nil
}

func circle(lat, lng, radiusM float64) *Shape {
	s := &Shape{kind: Circle, lat: lat, lng: lng, radiusM: radiusM}
	s.center = s2.PointFromLatLng(s2.LatLngFromDegrees(lat, lng))
	s.radius = s1.Angle(radiusM / EarthRadiusM)
	s.cap = s2.CapFromCenterAngle(s.center, s.radius)
	return s
}

// NewPolygons returns the union of polygons, checked: every ring closed
// or not (a closing repeat of the first vertex is dropped, as are
// repeated consecutive vertices), with at least three distinct vertices,
// no two consecutive ones antipodal, no edge crossing or touching another
// of the same polygon, every hole inside its shell, and no more than
// maxVertices (MaxVertices when 0 or more) in all, counted before any
// of the costlier checks. A ring bounds the smaller of the two regions it
// divides the sphere into, whichever way it winds.
func NewPolygons(polys []Rings, maxVertices int) (*Shape, error) {
	if maxVertices <= 0 || maxVertices > MaxVertices {
		maxVertices = MaxVertices
	}
	if len(polys) == 0 {
		return nil, shapeErr("no polygon")
	}
	s := &Shape{kind: Polygon, polys: make([]Rings, len(polys))}
	for i, rings := range polys {
		if len(rings) == 0 {
			return nil, shapeErr("polygon %d has no ring", i)
		}
		s.polys[i] = make(Rings, len(rings))
		for j, ring := range rings {
			r, err := cleanRing(ring)
			if err != nil {
				return nil, shapeErr("polygon %d ring %d: %v", i, j, err)
			}
			s.polys[i][j] = r
			s.vertices += len(r)
			if s.vertices > maxVertices {
				return nil, shapeErr("more than %d vertices", maxVertices)
			}
		}
	}
	for i, rings := range s.polys {
		if err := checkPolygon(rings); err != nil {
			return nil, shapeErr("polygon %d: %v", i, err)
		}
	}
	return s, nil
}

// cleanRing checks a ring's positions and drops its closing repeat and
// repeated consecutive vertices.
func cleanRing(ring []LatLng) ([]LatLng, error) {
	out := make([]LatLng, 0, len(ring))
	for k, v := range ring {
		if err := CheckLatLng(v.Lat, v.Lng); err != nil {
			return nil, fmt.Errorf("vertex %d: %w", k, err)
		}
		if len(out) > 0 && samePlace(out[len(out)-1], v) {
			continue
		}
		out = append(out, v)
	}
	for len(out) > 1 && samePlace(out[0], out[len(out)-1]) {
		out = out[:len(out)-1]
	}
	if len(out) < 3 {
		return nil, errors.New("fewer than 3 distinct vertices")
	}
	return out, nil
}

// samePlace reports whether two positions are one point of the sphere (a
// pole at any longitude, or ±180°).
func samePlace(a, b LatLng) bool {
	return pointOf(a) == pointOf(b)
}

func pointOf(v LatLng) s2.Point { return s2.PointFromLatLng(s2.LatLngFromDegrees(v.Lat, v.Lng)) }

// Kind is the shape's form.
func (s *Shape) Kind() Kind { return s.kind }

// Circle returns a circle's centre and radius.
func (s *Shape) Circle() (lat, lng, radiusM float64) { return s.lat, s.lng, s.radiusM }

// Polygons returns a polygon shape's rings, which the caller must not
// modify.
func (s *Shape) Polygons() []Rings { return s.polys }

// Vertices is a polygon shape's number of vertices (0 for a circle).
func (s *Shape) Vertices() int { return s.vertices }

// polygons returns the S2 form of a polygon shape, built once.
func (s *Shape) polygons() []*s2.Polygon {
	s.once.Do(func() {
		s.regions = make([]*s2.Polygon, len(s.polys))
		for i, rings := range s.polys {
			s.regions[i] = s2Polygon(rings)
		}
	})
	return s.regions
}

// s2Polygon builds one polygon from rings checked by NewPolygons (or read
// back from what it made): each ring normalized to the smaller region,
// nesting found by S2.
func s2Polygon(rings Rings) *s2.Polygon {
	loops := make([]*s2.Loop, len(rings))
	for i, r := range rings {
		loops[i] = loopOf(r)
	}
	return s2.PolygonFromLoops(loops)
}

func loopOf(r []LatLng) *s2.Loop {
	pts := make([]s2.Point, len(r))
	for k, v := range r {
		pts[k] = pointOf(v)
	}
	l := s2.LoopFromPoints(pts)
	l.Normalize()
	return l
}

// Intersects reports whether the two shapes share a point: circles whose
// centres are no further apart than their radii added, a circle that
// reaches a polygon's inside or boundary, polygons that overlap or touch.
func (s *Shape) Intersects(o *Shape) bool {
	switch {
	case s.kind == Circle && o.kind == Circle:
		return s.center.Distance(o.center) <= s.radius+o.radius
	case s.kind == Circle:
		return o.meetsCircle(s)
	case o.kind == Circle:
		return s.meetsCircle(o)
	}
	for _, a := range s.polygons() {
		for _, b := range o.polygons() {
			if a.Intersects(b) {
				return true
			}
		}
	}
	return false
}

// meetsCircle reports whether polygon shape s meets circle c.
func (s *Shape) meetsCircle(c *Shape) bool {
	limit := s1.ChordAngleFromAngle(c.radius)
	for _, p := range s.polygons() {
		if !p.CapBound().Intersects(c.cap) {
			continue
		}
		if p.ContainsPoint(c.center) {
			return true
		}
		for _, l := range p.Loops() {
			n := l.NumEdges()
			for e := range n {
				ed := l.Edge(e)
				if d, _ := s2.UpdateMinDistance(c.center, ed.V0, ed.V1, s1.InfChordAngle()); d <= limit {
					return true
				}
			}
		}
	}
	return false
}

// IntersectsCell reports whether the shape meets the region of cell id.
// An id that is not a grid cell has no region: it meets every shape (the
// cells alone decide).
func (s *Shape) IntersectsCell(id dewey.ID) bool {
	c, ok := CellID(id)
	if !ok {
		return true
	}
	cell := s2.CellFromCellID(c)
	if s.kind == Circle {
		if s.radiusM == 0 {
			return cell.ContainsPoint(s.center)
		}
		return s.cap.IntersectsCell(cell)
	}
	for _, p := range s.polygons() {
		if p.IntersectsCell(cell) {
			return true
		}
	}
	return false
}

// Cover returns at most maxCells cells no deeper than level that together
// cover the shape, in Dewey order; fewer when fewer do. A shape across
// the edges of several faces may need up to one cell per face it touches,
// even if maxCells is smaller.
func (s *Shape) Cover(maxCells, level int) ([]dewey.ID, error) {
	if level < 0 || level > MaxLevel {
		return nil, fmt.Errorf("%w: %d not in 0…%d", ErrLevel, level, MaxLevel)
	}
	if maxCells < 1 {
		return nil, shapeErr("cover of %d cells", maxCells)
	}
	var region s2.Region
	switch {
	case s.kind == Circle && s.radiusM == 0:
		return []dewey.ID{Dewey(s2.CellIDFromLatLng(s2.LatLngFromPoint(s.center)).Parent(level))}, nil
	case s.kind == Circle:
		region = s.cap
	default:
		ru := make(s2.RegionUnion, 0, len(s.polys))
		for _, p := range s.polygons() {
			ru = append(ru, p)
		}
		region = ru
	}
	rc := &s2.RegionCoverer{MinLevel: 0, MaxLevel: level, LevelMod: 1, MaxCells: maxCells}
	cu := rc.Covering(region)
	out := make([]dewey.ID, len(cu))
	for i, c := range cu {
		out[i] = Dewey(c)
	}
	slices.SortFunc(out, dewey.Compare)
	return out, nil
}
