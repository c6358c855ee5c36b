package workload

import (
	"math"
	"math/rand"
	"sort"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/geo"
)

// Bounds is a latitude/longitude rectangle, in degrees.
type Bounds struct{ MinLat, MaxLat, MinLng, MaxLng float64 }

// Contains reports whether the point lies in b (edges included).
func (b Bounds) Contains(lat, lng float64) bool {
	return lat >= b.MinLat && lat <= b.MaxLat && lng >= b.MinLng && lng <= b.MaxLng
}

// NewYork is the extent of the places data (bench/places): New York
// State. The s2 space keeps its users in it, and so do the benchmarks
// that place users on the world grid; the thesis's spaces keep them in
// their quad tree's box, which is the same.
var NewYork = Bounds{MinLat: 40.49, MaxLat: 45.02, MinLng: -79.77, MaxLng: -71.85}

// levels draws a level from lo to hi, level i with weight 1/2^(hi−i):
// each level twice as likely as the one above it, as thesis section 4.7
// weights the quad tree's.
type levels struct {
	lo  int
	cum []float64 // cumulative weights of lo, lo+1, …, hi
}

func newLevels(lo, hi int) levels {
	l := levels{lo: lo}
	total := 0.0
	for i := lo; i <= hi; i++ {
		total += 1 / math.Pow(2, float64(hi-i))
		l.cum = append(l.cum, total)
	}
	return l
}

func (l levels) draw(rng *rand.Rand) int {
	x := rng.Float64() * l.cum[len(l.cum)-1]
	// The first level whose cumulative weight exceeds x.
	return l.lo + min(sort.Search(len(l.cum), func(i int) bool { return x < l.cum[i] }), len(l.cum)-1)
}

// leaf names the finest cell holding a point: moving out of it is a move.
func (g *Generator) leaf(lat, lng float64) string {
	var id dewey.ID
	switch g.cfg.Space {
	case Grid:
		id, _ = g.grid.Cell(lat, lng)
	case S2:
		id, _ = geo.PointCell(lat, lng, g.cfg.Level)
	default:
		id, _ = g.tree.Cell(lat, lng, g.cfg.Depth)
	}
	return id.String()
}

// cell maps where u stands to the operation's cell (and radius). The
// errors ignored cannot happen: the point lies in the area (start and
// walk see to it), the levels and the radius were checked (withDefaults).
func (g *Generator) cell(u *user) (dewey.ID, float64) {
	switch g.cfg.Space {
	case S2:
		id, _ := geo.PointCell(u.lat, u.lng, g.levels.draw(g.rng))
		return id, 0
	case Quad:
		level := g.cfg.Level
		if level == 0 {
			level = g.levels.draw(g.rng)
		}
		id, _ := g.tree.Cell(u.lat, u.lng, level)
		return id, 0
	case Circle:
		times := g.cfg.RadiusTimes
		if times == 0 {
			times = []float64{4, 2, 1, 0.5, 0.25}[g.rng.Intn(5)]
		}
		r := g.cfg.Radius * times
		id, _ := g.tree.CircleCell(u.lat, u.lng, r)
		return id, r
	}
	id, _ := g.grid.Cell(u.lat, u.lng)
	return id, 0
}
