package dewey

import (
	"errors"
	"math"
	"math/rand"
	"testing"
)

func nyTree(t *testing.T) *QuadTree {
	q, err := NewQuadTree(NewYorkState, MaxGeoDepth)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func randPoint(rng *rand.Rand, b BBox) (float64, float64) {
	return b.MinLat + rng.Float64()*(b.MaxLat-b.MinLat), b.MinLng + rng.Float64()*(b.MaxLng-b.MinLng)
}

func TestCellsNestAndContainTheirPoints(t *testing.T) {
	q := nyTree(t)
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 5000; i++ {
		lat, lng := randPoint(rng, NewYorkState)
		var prev ID
		for d := 1; d <= MaxGeoDepth; d++ {
			id, err := q.Cell(lat, lng, d)
			if err != nil || len(id) != d || q.Check(id) != nil {
				t.Fatalf("Cell(%g,%g,%d) = %v, %v", lat, lng, d, id, err)
			}
			b, _ := q.CellBox(id)
			if !b.Contains(lat, lng) {
				t.Fatalf("cell %v box %+v lacks (%g,%g)", id, b, lat, lng)
			}
			if prev != nil && !prev.IsAncestorOrSelf(id) {
				t.Fatalf("depth %d cell %v not under %v", d, id, prev)
			}
			prev = id
		}
	}
	// Child order: 1 north-west, 2 north-east, 3 south-west, 4 south-east.
	b := NewYorkState
	for want, p := range map[uint32][2]float64{1: {44.9, -79.7}, 2: {44.9, -71.9}, 3: {40.5, -79.7}, 4: {40.5, -71.9}} {
		id, _ := q.Cell(p[0], p[1], 2)
		if id[1] != want {
			t.Fatalf("point %v in quadrant %d, want %d", p, id[1], want)
		}
	}
	// Corners belong to the tree.
	for _, p := range [][2]float64{{b.MinLat, b.MinLng}, {b.MaxLat, b.MaxLng}} {
		if _, err := q.Cell(p[0], p[1], 16); err != nil {
			t.Fatalf("corner %v: %v", p, err)
		}
	}
}

func TestGeoBadInput(t *testing.T) {
	q := nyTree(t)
	for _, p := range [][2]float64{{40.0, -75}, {46, -75}, {42, -80}, {42, -70}, {math.NaN(), -75}, {42, math.Inf(1)}} {
		if _, err := q.Cell(p[0], p[1], 5); !errors.Is(err, ErrOutOfBounds) {
			t.Fatalf("Cell%v: %v", p, err)
		}
	}
	if _, err := q.Cell(42, -75, 0); !errors.Is(err, ErrBadDepth) {
		t.Fatal(err)
	}
	if _, err := q.Cell(42, -75, 17); !errors.Is(err, ErrBadDepth) {
		t.Fatal(err)
	}
	for _, id := range []ID{{2}, {1, 5}, {1, 0}, {}} {
		if err := q.Check(id); !errors.Is(err, ErrNotInTree) {
			t.Fatalf("Check(%v): %v", id, err)
		}
	}
	if _, err := q.CircleCell(42, -75, -1); !errors.Is(err, ErrBadRadius) {
		t.Fatal(err)
	}
	if _, err := NewQuadTree(BBox{MinLat: 1, MaxLat: 1, MinLng: 0, MaxLng: 1}, 4); !errors.Is(err, ErrBadBox) {
		t.Fatal(err)
	}
}

func area(b BBox) float64 { return (b.MaxLat - b.MinLat) * (b.MaxLng - b.MinLng) }

func TestCirclesAndCovers(t *testing.T) {
	q := nyTree(t)
	rng := rand.New(rand.NewSource(2))
	for i := 0; i < 2000; i++ {
		lat, lng := randPoint(rng, BBox{MinLat: 40.6, MaxLat: 44.9, MinLng: -79.6, MaxLng: -72})
		r := []float64{250, 1000, 4000, 16000}[rng.Intn(4)]
		cell, err := q.CircleCell(lat, lng, r)
		if err != nil {
			t.Fatal(err)
		}
		cb, _ := q.CellBox(cell)
		circle := circleBox(lat, lng, r)
		if !cb.ContainsBox(circle) && len(cell) > 1 {
			t.Fatalf("cell %v does not contain circle at (%g,%g) r=%g", cell, lat, lng, r)
		}
		if len(cell) < MaxGeoDepth {
			for c := uint32(1); c <= 4; c++ {
				if cb.child(c).ContainsBox(circle) {
					t.Fatalf("child %d of %v also contains the circle: not smallest", c, cell)
				}
			}
		}
		k := 1 + rng.Intn(8)
		cover, err := q.CircleCover(lat, lng, r, k)
		if err != nil || len(cover) == 0 || len(cover) > k {
			t.Fatalf("cover of %d cells (k=%d): %v", len(cover), k, err)
		}
		total := 0.0
		for _, c := range cover {
			b, _ := q.CellBox(c)
			total += area(b)
			if !cell.IsAncestorOrSelf(c) {
				t.Fatalf("cover cell %v outside containing cell %v", c, cell)
			}
		}
		if total > area(cb)*1.0000001 {
			t.Fatalf("cover area %g exceeds containing cell's %g", total, area(cb))
		}
		// Every point of the circle lies in some cover cell.
		for j := 0; j < 20; j++ {
			a, d := rng.Float64()*2*math.Pi, r*math.Sqrt(rng.Float64())*0.999
			plat := lat + d*math.Sin(a)/metresPerDegree
			plng := lng + d*math.Cos(a)/(metresPerDegree*math.Cos(lat*math.Pi/180))
			if !NewYorkState.Contains(plat, plng) {
				continue
			}
			found := false
			for _, c := range cover {
				if b, _ := q.CellBox(c); b.Contains(plat, plng) {
					found = true
				}
			}
			if !found {
				t.Fatalf("point (%g,%g) of the circle is in no cover cell %v", plat, plng, cover)
			}
		}
	}
}

func TestLeaves(t *testing.T) {
	q := nyTree(t)
	leaves, err := q.Leaves(MustParse("1.4"), 4, 1000)
	if err != nil || len(leaves) != 16 || leaves[0].String() != "1.4.1.1" || leaves[15].String() != "1.4.4.4" {
		t.Fatalf("%v %v", leaves, err)
	}
	if _, err := q.Leaves(ID{1}, 16, 1000); err == nil {
		t.Fatal("huge expansion accepted")
	}
}

func TestGrid(t *testing.T) {
	g, err := NewGrid(NewYorkState, 500, 500)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(3))
	for i := 0; i < 10000; i++ {
		lat, lng := randPoint(rng, NewYorkState)
		id, err := g.Cell(lat, lng)
		if err != nil || len(id) != 1 || id[0] < 1 || int(id[0]) > 250000 {
			t.Fatalf("%v %v", id, err)
		}
		b, _ := g.CellBox(id)
		if !b.Contains(lat, lng) {
			t.Fatalf("grid cell %v box %+v lacks point", id, b)
		}
	}
	if id, _ := g.Cell(NewYorkState.MaxLat, NewYorkState.MaxLng); id[0] != 250000 {
		t.Fatalf("top corner in cell %v", id)
	}
}
