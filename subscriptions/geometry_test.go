package subscriptions

import (
	"math"
	"math/rand"
	"testing"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/geo"
	"github.com/seed84792017/cellcast/geo/geotest"
)

// TestMeetsAgreesWithOracle is geo's geometry against the oracle's brute
// force: pairs of shapes anywhere, near each other, and shapes against
// the cells of their neighbourhood.
func TestMeetsAgreesWithOracle(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	n := 30000
	if testing.Short() {
		n = 5000
	}
	met := 0
	for i := range n {
		lat, lng := geotest.Place(rng)
		a := geotest.Shape(rng, lat, lng, 3000)
		blat, blng := geotest.Destination(lat, lng, rng.Float64()*6000, rng.Float64()*2*math.Pi)
		b := geotest.Shape(rng, blat, blng, 3000)
		got, want := Meets(a, nil, b, nil), oracleMeets(a, nil, b, nil)
		if got != want {
			t.Fatalf("pair %d: geo %v, oracle %v:\n%s\n%s", i, got, want, a.AppendGeoJSON(nil), b.AppendGeoJSON(nil))
		}
		if got {
			met++
		}
		// Against a cell near b, of any level: faces are larger than a
		// hemisphere's quarter, deep cells smaller than the shapes.
		id, err := geo.PointCell(blat, blng, rng.Intn(18))
		if err != nil {
			t.Fatal(err)
		}
		// And against a face, often the one of a's antipode.
		face := dewey.ID{uint32(1 + rng.Intn(6))}
		for _, id := range []dewey.ID{id, face} {
			c := []Cell{{NS: NSCell, ID: id}}
			if got, want := Meets(a, nil, nil, c), oracleMeets(a, nil, nil, c); got != want && !nearCellEdge(a, id) {
				t.Fatalf("pair %d: geo %v, oracle %v against cell %v:\n%s", i, got, want, id, a.AppendGeoJSON(nil))
			}
		}
	}
	if met < n/10 || met > n*9/10 {
		t.Fatalf("%d of %d pairs met: the test draws too few of one kind", met, n)
	}
}

// nearCellEdge leaves out a shape whose boundary passes within a
// millimetre of a cell's: S2's polygon-cell test has a documented error
// there, and a point drawn on a cell's corner lies on both sides.
func nearCellEdge(s *geo.Shape, id dewey.ID) bool {
	const mm = 1e-3 / geo.EarthRadiusM
	cell, _ := oCell(id)
	o := oShapeOf(s)
	if o.circle {
		return cell.edges(func(a, b vec) bool { return math.Abs(arcDistance(o.centre, a, b)-o.radius) < mm })
	}
	return o.edges(func(a, b vec) bool {
		return cell.vertices(func(v vec) bool { return arcDistance(v, a, b) < mm })
	}) || cell.edges(func(a, b vec) bool {
		return o.vertices(func(v vec) bool { return arcDistance(v, a, b) < mm })
	})
}

func TestMeetsRule(t *testing.T) {
	nyc, _ := geo.NewCircle(40.758, -73.9855, 1000)
	near, _ := geo.NewCircle(40.7625, -73.9855, 10) // 500 m north
	far, _ := geo.NewCircle(40.8030, -73.9855, 300) // 5 km north
	home, _ := geo.PointCell(40.758, -73.9855, 14)
	paris, _ := geo.PointCell(48.8566, 2.3522, 14)
	cell := func(id dewey.ID) []Cell { return []Cell{{NS: NSCell, ID: id}} }
	cases := []struct {
		name string
		got  bool
		want bool
	}{
		{"500 m away", Meets(nyc, nil, near, nil), true},
		{"5 km away", Meets(nyc, nil, far, nil), false},
		{"circle against its cell", Meets(nyc, nil, nil, cell(home)), true},
		{"cell against the circle", Meets(nil, cell(home), nyc, nil), true},
		{"circle against Paris", Meets(nyc, nil, nil, cell(paris)), false},
		{"two cells", Meets(nil, cell(home), nil, cell(paris)), true},
		{"off-grid cell", Meets(nyc, nil, nil, cell(dewey.ID{9, 9})), true},
		{"topic", Meets(nyc, nil, nil, []Cell{{NS: NSTopic, ID: home}}), false},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %v", c.name, c.got)
		}
	}
}
