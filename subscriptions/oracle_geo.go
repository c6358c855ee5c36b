package subscriptions

import (
	"math"

	"github.com/golang/geo/s2"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/geo"
)

// The oracle's geometry, by brute force and from first principles: unit
// vectors, great-circle distances, winding numbers and arc crossings,
// none of it from package geo, whose answers the oracle checks. Only a
// cell's corners come from the S2 library (the grid is S2's by
// definition); its edges are great-circle arcs like a polygon's.

type vec [3]float64

func vecOf(lat, lng float64) vec {
	la, ln := lat*math.Pi/180, lng*math.Pi/180
	return vec{math.Cos(la) * math.Cos(ln), math.Cos(la) * math.Sin(ln), math.Sin(la)}
}

func dot(a, b vec) float64 { return a[0]*b[0] + a[1]*b[1] + a[2]*b[2] }

func cross(a, b vec) vec {
	return vec{a[1]*b[2] - a[2]*b[1], a[2]*b[0] - a[0]*b[2], a[0]*b[1] - a[1]*b[0]}
}

func norm(a vec) float64 { return math.Sqrt(dot(a, a)) }

// angle is the great-circle angle between two unit vectors.
func angle(a, b vec) float64 { return math.Atan2(norm(cross(a, b)), dot(a, b)) }

// oShape is a shape as the oracle sees it: a cap, or polygons of rings.
type oShape struct {
	circle bool
	centre vec
	radius float64 // radians
	polys  [][][]vec
}

func oShapeOf(s *geo.Shape) oShape {
	if s.Kind() == geo.Circle {
		lat, lng, r := s.Circle()
		return oShape{circle: true, centre: vecOf(lat, lng), radius: r / geo.EarthRadiusM}
	}
	var o oShape
	for _, rings := range s.Polygons() {
		var p [][]vec
		for _, r := range rings {
			vs := make([]vec, len(r))
			for k, v := range r {
				vs[k] = vecOf(v.Lat, v.Lng)
			}
			p = append(p, smallerOnLeft(vs))
		}
		o.polys = append(o.polys, p)
	}
	return o
}

// oCell is a grid cell as a polygon of its four corners; ok is false for
// an id that is not a grid cell.
func oCell(id dewey.ID) (oShape, bool) {
	if len(id) == 0 || id[0] < 1 || id[0] > 6 || len(id) > s2.MaxLevel+1 {
		return oShape{}, false
	}
	c := s2.CellIDFromFace(int(id[0] - 1))
	for _, k := range id[1:] {
		if k < 1 || k > 4 {
			return oShape{}, false
		}
		c = c.Children()[k-1]
	}
	cell := s2.CellFromCellID(c)
	ring := make([]vec, 4)
	for k := range 4 {
		v := cell.Vertex(k)
		ring[k] = vec{v.X, v.Y, v.Z}
	}
	return oShape{polys: [][][]vec{{smallerOnLeft(ring)}}}, true
}

// winding is the signed sum of the angles ring subtends at p: about +2π
// when p lies on the ring's left, about −2π when the ring separates p
// from its antipode with p on its right, and about 0 otherwise.
func winding(p vec, ring []vec) float64 {
	sum := 0.0
	for k := range ring {
		a, b := ring[k], ring[(k+1)%len(ring)]
		sum += math.Atan2(dot(p, cross(a, b)), dot(a, b)-dot(p, a)*dot(p, b))
	}
	return sum
}

// leftArea is the area on the ring's left: 2π less the turns the ring
// makes at its vertices (Gauss–Bonnet).
func leftArea(ring []vec) float64 {
	turns := 0.0
	n := len(ring)
	for k := range n {
		a, b, c := ring[(k+n-1)%n], ring[k], ring[(k+1)%n]
		n1, n2 := cross(a, b), cross(b, c)
		turns += math.Atan2(dot(b, cross(n1, n2)), dot(n1, n2))
	}
	return 2*math.Pi - turns
}

// smallerOnLeft orders a ring so that the smaller of its two regions lies
// on its left.
func smallerOnLeft(ring []vec) []vec {
	if leftArea(ring) <= 2*math.Pi {
		return ring
	}
	out := make([]vec, len(ring))
	for k, v := range ring {
		out[len(ring)-1-k] = v
	}
	return out
}

// inRing: ring (smaller region on its left) winds once around p.
func inRing(p vec, ring []vec) bool { return winding(p, ring) > math.Pi }

// inPolygon: inside the shell and in none of the holes.
func inPolygon(p vec, rings [][]vec) bool {
	if !inRing(p, rings[0]) {
		return false
	}
	for _, h := range rings[1:] {
		if inRing(p, h) {
			return false
		}
	}
	return true
}

// arcDistance is the angle from p to the arc from a to b.
func arcDistance(p, a, b vec) float64 {
	n := cross(a, b)
	nn := norm(n)
	n = vec{n[0] / nn, n[1] / nn, n[2] / nn}
	along := dot(p, n)
	q := vec{p[0] - along*n[0], p[1] - along*n[1], p[2] - along*n[2]}
	if dot(cross(a, q), n) >= 0 && dot(cross(q, b), n) >= 0 {
		return math.Abs(math.Asin(math.Max(-1, math.Min(1, along))))
	}
	return math.Min(angle(p, a), angle(p, b))
}

// arcsCross reports whether arcs ab and cd (each shorter than half the
// circle) share a point: the great circles meet at ±x, and one of those
// lies on both arcs.
func arcsCross(a, b, c, d vec) bool {
	n1, n2 := cross(a, b), cross(c, d)
	x := cross(n1, n2)
	if norm(x) == 0 {
		return false // one great circle: collinear arcs are left to the vertex tests
	}
	on := func(p, a, b, n vec) bool { return dot(cross(a, p), n) >= 0 && dot(cross(p, b), n) >= 0 }
	for _, s := range []float64{1, -1} {
		p := vec{s * x[0], s * x[1], s * x[2]}
		if on(p, a, b, n1) && on(p, c, d, n2) {
			return true
		}
	}
	return false
}

func (o oShape) contains(p vec) bool {
	for _, rings := range o.polys {
		if inPolygon(p, rings) {
			return true
		}
	}
	return false
}

func (o oShape) edges(fn func(a, b vec) bool) bool {
	for _, rings := range o.polys {
		for _, r := range rings {
			for k := range r {
				if fn(r[k], r[(k+1)%len(r)]) {
					return true
				}
			}
		}
	}
	return false
}

func (o oShape) vertices(fn func(v vec) bool) bool {
	for _, rings := range o.polys {
		for _, r := range rings {
			for _, v := range r {
				if fn(v) {
					return true
				}
			}
		}
	}
	return false
}

// oMeet is whether two shapes share a point.
func oMeet(a, b oShape) bool {
	switch {
	case a.circle && b.circle:
		return angle(a.centre, b.centre) <= a.radius+b.radius
	case b.circle:
		a, b = b, a
		fallthrough
	case a.circle:
		return b.contains(a.centre) || b.edges(func(x, y vec) bool { return arcDistance(a.centre, x, y) <= a.radius })
	}
	return a.vertices(b.contains) || b.vertices(a.contains) ||
		a.edges(func(p, q vec) bool { return b.edges(func(r, s vec) bool { return arcsCross(p, q, r, s) }) })
}

// oracleMeets is the oracle's version of Meets.
func oracleMeets(as *geo.Shape, ac []Cell, bs *geo.Shape, bc []Cell) bool {
	switch {
	case as != nil && bs != nil:
		return oMeet(oShapeOf(as), oShapeOf(bs))
	case as == nil && bs == nil:
		return true
	case as == nil:
		as, ac, bc = bs, bc, ac
	}
	s := oShapeOf(as)
	for _, c := range bc {
		if c.NS != NSCell {
			continue
		}
		cell, ok := oCell(c.ID)
		if !ok || oMeet(s, cell) {
			return true
		}
	}
	return false
}
