package places

import (
	"math/rand"
	"testing"
)

func TestLoadDropsDoubleCountedNYC(t *testing.T) {
	ps, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	total, nyc := 0, 0
	for _, p := range ps {
		if p.Name == "New York City" {
			t.Fatal("the aggregate NYC row is kept")
		}
		total += p.Population
		switch p.Name {
		case "Brooklyn", "Manhattan", "Queens", "Bronx", "The Bronx", "Staten Island":
			nyc += p.Population
		}
	}
	// The data README: about 15.4 M people, NYC about half.
	if total < 14_000_000 || total > 17_000_000 || nyc < total*4/10 || nyc > total*6/10 {
		t.Fatalf("total %d, NYC boroughs %d", total, nyc)
	}
}

func TestSamplerFollowsPopulation(t *testing.T) {
	ps, _ := Load()
	s := NewSampler(ps)
	rng := rand.New(rand.NewSource(1))
	nyc := 0
	n := 20000
	for range n {
		lat, lng := s.Point(rng)
		if inNYC(lat, lng) {
			nyc++
		}
	}
	if f := float64(nyc) / float64(n); f < 0.4 || f > 0.65 {
		t.Fatalf("%.2f of points in the NYC box, want about half", f)
	}
}

func TestLoadZIPsOncePerCentroid(t *testing.T) {
	zs, err := LoadZIPs()
	if err != nil {
		t.Fatal(err)
	}
	// 2,232 rows, some sharing a post office's centroid.
	if len(zs) < 1500 || len(zs) > 2232 {
		t.Fatalf("%d ZIP centroids", len(zs))
	}
	seen := map[[2]float64]bool{}
	for _, z := range zs {
		k := [2]float64{z.Lat, z.Lng}
		if seen[k] {
			t.Fatalf("centroid %v twice", k)
		}
		seen[k] = true
		if z.Lat < 40 || z.Lat > 45.1 || z.Lng < -80 || z.Lng > -71.8 {
			t.Fatalf("%s at (%g, %g) is outside New York", z.Name, z.Lat, z.Lng)
		}
	}
}
