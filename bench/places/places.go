package places

import (
	_ "embed"
	"encoding/csv"
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strconv"
	"strings"
)

//go:embed ny_places_geonames.csv
var placesCSV string

//go:embed ny_zipcodes_geonames.csv
var zipsCSV string

// Place is one populated place.
type Place struct {
	Name       string
	Population int
	Lat, Lng   float64
}

// Load returns the places. New York City appears in GeoNames as an
// aggregate row, as its five boroughs (PPLA2) and as neighbourhoods (PPL,
// PPLX); only the boroughs stay, so nobody counts twice.
func Load() ([]Place, error) {
	rows, err := csv.NewReader(strings.NewReader(placesCSV)).ReadAll()
	if err != nil {
		return nil, err
	}
	var out []Place
	for i, r := range rows[1:] {
		if len(r) != 6 {
			return nil, fmt.Errorf("places: row %d has %d fields", i+2, len(r))
		}
		pop, err1 := strconv.Atoi(r[3])
		lat, err2 := strconv.ParseFloat(r[4], 64)
		lng, err3 := strconv.ParseFloat(r[5], 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("places: row %d: bad number", i+2)
		}
		if r[1] == "New York City" || r[2] != "PPLA2" && inNYC(lat, lng) {
			continue
		}
		if pop > 0 {
			out = append(out, Place{Name: r[1], Population: pop, Lat: lat, Lng: lng})
		}
	}
	return out, nil
}

// LoadZIPs returns the ZIP code centroids, named "city ZIP", without
// population. Several ZIP codes share a centroid (PO boxes of one office);
// each centroid appears once.
func LoadZIPs() ([]Place, error) {
	rows, err := csv.NewReader(strings.NewReader(zipsCSV)).ReadAll()
	if err != nil {
		return nil, err
	}
	seen := map[[2]float64]bool{}
	var out []Place
	for i, r := range rows[1:] {
		if len(r) != 6 {
			return nil, fmt.Errorf("places: ZIP row %d has %d fields", i+2, len(r))
		}
		lat, err1 := strconv.ParseFloat(r[1], 64)
		lng, err2 := strconv.ParseFloat(r[2], 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("places: ZIP row %d: bad number", i+2)
		}
		if k := [2]float64{lat, lng}; !seen[k] {
			seen[k] = true
			out = append(out, Place{Name: r[3] + " " + r[0], Lat: lat, Lng: lng})
		}
	}
	return out, nil
}

// inNYC is a box around the five boroughs.
func inNYC(lat, lng float64) bool { return lat > 40.49 && lat < 40.92 && lng > -74.26 && lng < -73.70 }

// Sampler draws population-weighted points.
type Sampler struct {
	places []Place
	cum    []float64
}

// NewSampler weights places by population.
func NewSampler(ps []Place) *Sampler {
	s := &Sampler{places: ps, cum: make([]float64, len(ps))}
	total := 0.0
	for i, p := range ps {
		total += float64(p.Population)
		s.cum[i] = total
	}
	return s
}

// Place draws a place.
func (s *Sampler) Place(rng *rand.Rand) *Place {
	x := rng.Float64() * s.cum[len(s.cum)-1]
	return &s.places[sort.SearchFloat64s(s.cum, x)]
}

// Point draws a point: a place, then a normal scatter around it whose
// spread grows with the square root of its population (about 4 km for
// Brooklyn, a few hundred metres for a village).
func (s *Sampler) Point(rng *rand.Rand) (lat, lng float64) {
	p := s.Place(rng)
	return Scatter(rng, p.Lat, p.Lng, Spread(p.Population))
}

// Spread is the scatter, in degrees of latitude, of a place's people.
func Spread(population int) float64 { return 0.003 + 0.00002*math.Sqrt(float64(population)) }

// Scatter moves a point by a normal offset of sigma degrees (longitude
// scaled by latitude so the spread is round on the ground).
func Scatter(rng *rand.Rand, lat, lng, sigma float64) (float64, float64) {
	return lat + rng.NormFloat64()*sigma, lng + rng.NormFloat64()*sigma/math.Cos(lat*math.Pi/180)
}
