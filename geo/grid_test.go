package geo

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/golang/geo/s2"

	"github.com/seed84792017/cellcast/dewey"
)

// randomCell draws a cell anywhere, at any level.
func randomCell(rng *rand.Rand) s2.CellID {
	ll := s2.LatLngFromDegrees(rng.Float64()*180-90, rng.Float64()*360-180)
	return s2.CellIDFromLatLng(ll).Parent(rng.Intn(MaxLevel + 1))
}

func TestDeweyIsS2(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	cells := make([]s2.CellID, 2000)
	for i := range cells {
		c := randomCell(rng)
		cells[i] = c
		id := Dewey(c)
		if len(id) != c.Level()+1 || id[0] != uint32(c.Face())+1 {
			t.Fatalf("%v: dewey %v", c, id)
		}
		back, ok := CellID(id)
		if !ok || back != c {
			t.Fatalf("%v -> %v -> %v %v", c, id, back, ok)
		}
		if p, ok := c.Parent(max(c.Level()-1, 0)), c.Level() > 0; ok {
			if !Dewey(p).IsAncestorOrSelf(id) {
				t.Fatalf("parent %v of %v is not its Dewey ancestor", Dewey(p), id)
			}
		}
	}
	// Dewey order is S2 order wherever neither cell holds the other (a
	// Dewey ancestor sorts first, an S2 parent sits mid-range).
	for i := range cells {
		a, b := cells[i], cells[(i+1)%len(cells)]
		if a.Intersects(b) {
			continue
		}
		want := a.RangeMin() < b.RangeMin()
		if got := dewey.Compare(Dewey(a), Dewey(b)) < 0; got != want {
			t.Fatalf("%v vs %v: dewey order %v, s2 order %v", a, b, got, want)
		}
	}
}

func TestCellIDRefusesOtherIDs(t *testing.T) {
	for _, s := range []string{"7", "0", "1.5", "1.4.0", "3.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1"} {
		id, err := dewey.Parse(s)
		if err != nil {
			continue
		}
		if _, ok := CellID(id); ok {
			t.Errorf("%s taken as a grid cell", s)
		}
	}
	for _, s := range []string{"1", "6", "4.1.2.3.4", "3.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1"} {
		if _, ok := CellID(dewey.MustParse(s)); !ok {
			t.Errorf("%s refused", s)
		}
	}
}

func TestPointCell(t *testing.T) {
	id, err := PointCell(40.758, -73.9855, DefaultLevel)
	if err != nil || len(id) != DefaultLevel+1 {
		t.Fatalf("%v %v", id, err)
	}
	c, _ := CellID(id)
	if !s2.CellFromCellID(c).ContainsPoint(s2.PointFromLatLng(s2.LatLngFromDegrees(40.758, -73.9855))) {
		t.Fatal("point outside its cell")
	}
	for _, bad := range [][3]float64{{91, 0, 16}, {0, 181, 16}, {0, 0, 31}, {0, 0, -1}} {
		if _, err := PointCell(bad[0], bad[1], int(bad[2])); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if e := CellEdgeM(DefaultLevel); e < 100 || e > 200 {
		t.Errorf("level %d cells %.0f m across", DefaultLevel, e)
	}
}

func TestCellBounds(t *testing.T) {
	id, _ := PointCell(48.8566, 2.3522, 10)
	b, err := CellBounds(id)
	if err != nil {
		t.Fatal(err)
	}
	lats := []float64{b[0][0], b[1][0], b[2][0], b[3][0]}
	if slices.Min(lats) > 48.8566 || slices.Max(lats) < 48.8566 {
		t.Fatalf("bounds %v miss Paris", b)
	}
	if _, err := CellBounds(dewey.MustParse("9")); err == nil {
		t.Fatal("bounds of a non-cell")
	}
}
