package main

import (
	"math"
	"math/rand"
	"sort"

	"github.com/seed84792017/cellcast/bench/places"
	"github.com/seed84792017/cellcast/dewey"
)

// workload draws spots and publication cells.
type workload struct {
	sampler *places.Sampler
	tree    *dewey.QuadTree
	cum     []float64 // publication depth weights
}

func newWorkload() (*workload, error) {
	ps, err := places.Load()
	if err != nil {
		return nil, err
	}
	tree, err := dewey.NewQuadTree(dewey.NewYorkState, *geoDepth)
	if err != nil {
		return nil, err
	}
	w := &workload{sampler: places.NewSampler(ps), tree: tree}
	total := 0.0
	for d := 1; d <= *geoDepth; d++ {
		total += math.Pow(*depthRatio, float64(d))
		w.cum = append(w.cum, total)
	}
	return w, nil
}

// spot draws a point on the map.
func (w *workload) spot(rng *rand.Rand) (float64, float64) {
	for {
		lat, lng := w.sampler.Point(rng)
		if w.tree.Box().Contains(lat, lng) {
			return lat, lng
		}
	}
}

// incident draws a publication cell.
func (w *workload) incident(rng *rand.Rand) string {
	lat, lng := w.spot(rng)
	d := sort.SearchFloat64s(w.cum, rng.Float64()*w.cum[len(w.cum)-1]) + 1
	id, _ := w.tree.Cell(lat, lng, d)
	return id.String()
}
