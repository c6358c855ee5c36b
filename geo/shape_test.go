package geo

import (
	"errors"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/golang/geo/s2"
)

// haversineM is the great-circle distance in metres, written here from the
// formula rather than taken from S2.
func haversineM(a, b LatLng) float64 {
	const rad = math.Pi / 180
	dLat, dLng := (b.Lat-a.Lat)*rad, (b.Lng-a.Lng)*rad
	h := math.Sin(dLat/2)*math.Sin(dLat/2) + math.Cos(a.Lat*rad)*math.Cos(b.Lat*rad)*math.Sin(dLng/2)*math.Sin(dLng/2)
	return 2 * EarthRadiusM * math.Asin(math.Min(1, math.Sqrt(h)))
}

// offset moves from p by d metres on a bearing (radians).
func offset(p LatLng, d, bearing float64) LatLng {
	const rad = math.Pi / 180
	ad := d / EarthRadiusM
	lat1, lng1 := p.Lat*rad, p.Lng*rad
	lat2 := math.Asin(math.Sin(lat1)*math.Cos(ad) + math.Cos(lat1)*math.Sin(ad)*math.Cos(bearing))
	lng2 := lng1 + math.Atan2(math.Sin(bearing)*math.Sin(ad)*math.Cos(lat1), math.Cos(ad)-math.Sin(lat1)*math.Sin(lat2))
	lng := math.Remainder(lng2/rad, 360)
	return LatLng{Lat: lat2 / rad, Lng: lng}
}

// somewhere draws a place: anywhere, near the antimeridian or near a pole.
func somewhere(rng *rand.Rand) LatLng {
	switch rng.Intn(4) {
	case 0:
		return LatLng{Lat: rng.Float64()*20 - 10, Lng: 179.9 + rng.Float64()*0.2 - 360*float64(rng.Intn(2))*0}
	case 1:
		return LatLng{Lat: 89.9 - rng.Float64()*0.2, Lng: rng.Float64()*360 - 180}
	}
	return LatLng{Lat: rng.Float64()*170 - 85, Lng: rng.Float64()*360 - 180}
}

func wrap(p LatLng) LatLng {
	if p.Lng > 180 {
		p.Lng -= 360
	}
	return p
}

func TestCirclesMeetByDistance(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for range 20000 {
		a := wrap(somewhere(rng))
		b := offset(a, rng.Float64()*20000, rng.Float64()*2*math.Pi)
		ra, rb := rng.Float64()*8000, rng.Float64()*8000
		d := haversineM(a, b)
		if math.Abs(d-ra-rb) < 1e-3 {
			continue // tangent to a millimetre
		}
		sa, _ := NewCircle(a.Lat, a.Lng, ra)
		sb, err := NewCircle(b.Lat, b.Lng, rb)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := sa.Intersects(sb), d <= ra+rb; got != want {
			t.Fatalf("%v r %.1f and %v r %.1f, %.3f m apart: intersects %v", a, ra, b, rb, d, got)
		}
	}
}

func square(c LatLng, halfM float64) []LatLng {
	var r []LatLng
	for k := range 4 {
		r = append(r, offset(c, halfM*math.Sqrt2, math.Pi/4+float64(k)*math.Pi/2))
	}
	return r
}

func TestPolygonChecks(t *testing.T) {
	nyc := LatLng{Lat: 40.758, Lng: -73.9855}
	sq := square(nyc, 1000)
	closed := append(append([]LatLng(nil), sq...), sq[0])
	cases := []struct {
		name  string
		polys []Rings
		err   string
	}{
		{"square", []Rings{{closed}}, ""},
		{"unclosed is closed for you", []Rings{{sq}}, ""},
		{"with a hole", []Rings{{closed, square(nyc, 200)}}, ""},
		{"two", []Rings{{closed}, {square(offset(nyc, 5000, 0), 300)}}, ""},
		{"none", nil, "no polygon"},
		{"no ring", []Rings{{}}, "no ring"},
		{"two points", []Rings{{{nyc, sq[0], nyc}}}, "fewer than 3"},
		{"bow tie", []Rings{{{sq[0], sq[2], sq[1], sq[3]}}}, "cross"},
		{"lat", []Rings{{{{91, 0}, {0, 1}, {1, 1}}}}, "lat"},
		{"NaN", []Rings{{{{math.NaN(), 0}, {0, 1}, {1, 1}}}}, "lat"},
		{"hole outside", []Rings{{closed, square(offset(nyc, 5000, 0), 100)}}, "not inside"},
		{"hole across", []Rings{{closed, square(offset(nyc, 1000, 0), 100)}}, "crosses the shell"},
		{"holes overlap", []Rings{{closed, square(nyc, 200), square(offset(nyc, 100, 0), 200)}}, "overlap"},
		{"repeated vertex", []Rings{{{sq[0], sq[1], sq[2], sq[0], sq[3], sq[2]}}}, "same point"},
		{"antipodal", []Rings{{{{0, 0}, {0, 180}, {10, 10}}}}, "antipodal"},
	}
	for _, tc := range cases {
		_, err := NewPolygons(tc.polys, 0)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !(errors.Is(err, ErrShape) || errors.Is(err, ErrLatLng))):
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.err)
		}
	}
	big := make([]LatLng, MaxVertices+1)
	for k := range big {
		big[k] = offset(nyc, 1000, 2*math.Pi*float64(k)/float64(len(big)))
	}
	if _, err := NewPolygons([]Rings{{big}}, 0); err == nil || !strings.Contains(err.Error(), "vertices") {
		t.Errorf("%d vertices: %v", len(big), err)
	}
	if _, err := NewPolygons([]Rings{{big[:11]}}, 10); err == nil || !strings.Contains(err.Error(), "more than 10 vertices") {
		t.Errorf("11 vertices against a limit of 10: %v", err)
	}
	if _, err := NewPolygons([]Rings{{big[:10]}}, 10); err != nil {
		t.Errorf("10 vertices against a limit of 10: %v", err)
	}
}

func TestWindingDoesNotMatter(t *testing.T) {
	nyc := LatLng{Lat: 40.758, Lng: -73.9855}
	ccw := square(nyc, 1000)
	cw := []LatLng{ccw[3], ccw[2], ccw[1], ccw[0]}
	in, _ := NewCircle(nyc.Lat, nyc.Lng, 0)
	out, _ := NewCircle(40.9, -73.9855, 0)
	for _, r := range [][]LatLng{ccw, cw} {
		p, err := NewPolygons([]Rings{{r}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !p.Intersects(in) || p.Intersects(out) || !in.Intersects(p) {
			t.Fatalf("winding %v: inside %v, outside %v", r, p.Intersects(in), p.Intersects(out))
		}
	}
}

func TestHoleExcludes(t *testing.T) {
	nyc := LatLng{Lat: 40.758, Lng: -73.9855}
	p, err := NewPolygons([]Rings{{square(nyc, 1000), square(nyc, 400)}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	at := func(l LatLng, r float64) *Shape { s, _ := NewCircle(l.Lat, l.Lng, r); return s }
	if p.Intersects(at(nyc, 100)) {
		t.Error("a circle inside the hole meets the polygon")
	}
	if !p.Intersects(at(nyc, 500)) {
		t.Error("a circle reaching past the hole misses the polygon")
	}
	if !p.Intersects(at(offset(nyc, 700, 0), 10)) {
		t.Error("a circle in the ring misses")
	}
	inner, _ := NewPolygons([]Rings{{square(nyc, 100)}}, 0)
	if p.Intersects(inner) || inner.Intersects(p) {
		t.Error("a polygon inside the hole meets the polygon")
	}
}

// TestCoverCovers checks that every point of a shape lies in a cell of
// its cover, for circles and polygons anywhere.
func TestCoverCovers(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for i := range 400 {
		c := wrap(somewhere(rng))
		r := math.Exp(rng.Float64()*math.Log(50000)) + 1
		var s *Shape
		var err error
		if i%2 == 0 {
			s, err = NewCircle(c.Lat, c.Lng, r)
		} else {
			s, err = NewPolygons([]Rings{{square(c, r)}}, 0)
		}
		if err != nil {
			t.Fatal(err)
		}
		k := 1 + rng.Intn(16)
		cover, err := s.Cover(k, DefaultLevel)
		if err != nil {
			t.Fatal(err)
		}
		if len(cover) > max(k, 6) {
			t.Fatalf("%d cells for k %d", len(cover), k)
		}
		var cells []s2.Cell
		for _, id := range cover {
			cid, ok := CellID(id)
			if !ok || cid.Level() > DefaultLevel {
				t.Fatalf("cover cell %v", id)
			}
			cells = append(cells, s2.CellFromCellID(cid))
		}
		for range 50 {
			p := offset(c, rng.Float64()*r*0.999, rng.Float64()*2*math.Pi)
			if i%2 == 1 {
				p = offset(c, rng.Float64()*r, rng.Float64()*2*math.Pi)
				pt, _ := NewCircle(p.Lat, p.Lng, 0)
				if !s.Intersects(pt) {
					continue
				}
			}
			in := false
			for _, cell := range cells {
				in = in || cell.ContainsPoint(pointOf(p))
			}
			if !in {
				t.Fatalf("shape %d at %v r %.0f: point %v outside its cover %v", i, c, r, p, cover)
			}
		}
	}
}

func TestIntersectsCell(t *testing.T) {
	nyc := LatLng{Lat: 40.758, Lng: -73.9855}
	home, _ := PointCell(nyc.Lat, nyc.Lng, 12)
	far, _ := PointCell(48.8566, 2.3522, 12)
	c, _ := NewCircle(nyc.Lat, nyc.Lng, 300)
	pt, _ := NewCircle(nyc.Lat, nyc.Lng, 0)
	poly, _ := NewPolygons([]Rings{{square(nyc, 300)}}, 0)
	for _, s := range []*Shape{c, pt, poly} {
		if !s.IntersectsCell(home) || s.IntersectsCell(far) {
			t.Errorf("kind %d: home %v, far %v", s.Kind(), s.IntersectsCell(home), s.IntersectsCell(far))
		}
	}
	if !c.IntersectsCell([]uint32{9, 9}) {
		t.Error("an id off the grid must leave the decision to the cells")
	}
}
