package main

import (
	"math"
	"math/rand"
	"sync"

	"github.com/seed84792017/cellcast/bench/places"
	"github.com/seed84792017/cellcast/geo"
)

// circle is a subscriber's or an incident's place.
type circle struct{ lat, lng, r float64 }

// New York City's five boroughs, where the circles are drawn.
const minLat, maxLat, minLng, maxLng = 40.49, 40.92, -74.26, -73.70

type workload struct {
	subs []circle
	rng  *rand.Rand
	smp  *places.Sampler
	pubs []circle // incidents, drawn on demand (closed loops ask for more)
	// subsAt buckets the subscribers by a grid of bucket degrees, for
	// judging: a pair can meet only within maxReach.
	subsAt map[[2]int][]int
}

const (
	bucket   = 0.05 // degrees: 5.5 km of latitude, 4.2 km of longitude here
	maxReach = 3000 + 2000
)

func newWorkload(seed int64) (*workload, error) {
	ps, err := places.Load()
	if err != nil {
		return nil, err
	}
	w := &workload{rng: rand.New(rand.NewSource(seed)), smp: places.NewSampler(ps), subsAt: map[[2]int][]int{}}
	for i := range *nSubs {
		lat, lng := w.point()
		c := circle{lat, lng, 200 + w.rng.Float64()*2800}
		w.subs = append(w.subs, c)
		k := key(lat, lng)
		w.subsAt[k] = append(w.subsAt[k], i)
	}
	return w, nil
}

func key(lat, lng float64) [2]int {
	return [2]int{int(math.Floor(lat / bucket)), int(math.Floor(lng / bucket))}
}

// point draws where people live in the five boroughs.
func (w *workload) point() (float64, float64) {
	for {
		lat, lng := w.smp.Point(w.rng)
		if lat > minLat && lat < maxLat && lng > minLng && lng < maxLng {
			return lat, lng
		}
	}
}

// incident returns the i-th incident, drawing those not drawn yet (in
// order, so a run's incidents depend on the seed alone).
func (w *workload) incident(i int) circle {
	pubMu.Lock()
	defer pubMu.Unlock()
	for len(w.pubs) <= i {
		lat, lng := w.point()
		w.pubs = append(w.pubs, circle{lat, lng, 50 + w.rng.Float64()*1950})
	}
	return w.pubs[i]
}

// haversineM is the great-circle distance in metres on geo's sphere,
// written here from the formula: the judge does not use the code it
// judges.
func haversineM(a, b circle) float64 {
	const rad = math.Pi / 180
	dLat, dLng := (b.lat-a.lat)*rad, (b.lng-a.lng)*rad
	h := math.Sin(dLat/2)*math.Sin(dLat/2) + math.Cos(a.lat*rad)*math.Cos(b.lat*rad)*math.Sin(dLng/2)*math.Sin(dLng/2)
	return 2 * geo.EarthRadiusM * math.Asin(math.Min(1, math.Sqrt(h)))
}

// judge compares the delivered pairs (subscriber, incident) with the
// owed ones among the first n incidents: the circles meet. Pairs within
// a metre of tangency count on neither side.
func (w *workload) judge(got [][2]int, n int) (precision, recall float64) {
	owed := map[[2]int]bool{}
	near := map[[2]int]bool{}
	for i := range n {
		p := w.pubs[i]
		k := key(p.lat, p.lng)
		for dy := -1; dy <= 1; dy++ {
			for dx := -2; dx <= 2; dx++ {
				for _, j := range w.subsAt[[2]int{k[0] + dy, k[1] + dx}] {
					d := haversineM(p, w.subs[j]) - p.r - w.subs[j].r
					switch {
					case math.Abs(d) < 1:
						near[[2]int{j, i}] = true
					case d < 0:
						owed[[2]int{j, i}] = true
					}
				}
			}
		}
	}
	hit, counted := 0, 0
	seen := map[[2]int]bool{}
	for _, pr := range got {
		if near[pr] {
			continue
		}
		counted++
		if owed[pr] && !seen[pr] {
			hit++
		}
		seen[pr] = true
	}
	return float64(hit) / float64(max(counted, 1)), float64(hit) / float64(max(len(owed), 1))
}

var pubMu sync.Mutex
