package main

import (
	"math"
	"math/rand"
	"sort"

	"github.com/seed84792017/cellcast/bench/places"
	benchworkload "github.com/seed84792017/cellcast/bench/workload"
	"github.com/seed84792017/cellcast/geo"
)

// workload draws spots and publication cells on the world grid over New
// York. Subscriptions are points, which the broker indexes at -geo-level;
// a publication's cell is at that level or above, so a subscription whose
// point lies in it is owed it by the cells alone and by the geometry
// (a point meets a cell it lies in), and the oracle's rule of cells holds.
type workload struct {
	sampler *places.Sampler
	cum     []float64 // publication level weights, from -pub-min-level
}

func newWorkload() (*workload, error) {
	ps, err := places.Load()
	if err != nil {
		return nil, err
	}
	w := &workload{sampler: places.NewSampler(ps)}
	total := 0.0
	for l := *pubMinLevel; l <= *geoLevel; l++ {
		total += math.Pow(*levelRatio, float64(l))
		w.cum = append(w.cum, total)
	}
	return w, nil
}

// inMap reports whether a point lies in New York, where users stay.
func inMap(lat, lng float64) bool { return benchworkload.NewYork.Contains(lat, lng) }

// spot draws a point on the map.
func (w *workload) spot(rng *rand.Rand) (float64, float64) {
	for {
		lat, lng := w.sampler.Point(rng)
		if inMap(lat, lng) {
			return lat, lng
		}
	}
}

// incident draws a publication cell.
func (w *workload) incident(rng *rand.Rand) string {
	lat, lng := w.spot(rng)
	level := *pubMinLevel + sort.SearchFloat64s(w.cum, rng.Float64()*w.cum[len(w.cum)-1])
	id, _ := geo.PointCell(lat, lng, level) // levels checked in checkLevels
	return id.String()
}
