package geotest

import (
	"math"
	"math/rand"

	"github.com/seed84792017/cellcast/geo"
)

// Place draws a position.
func Place(rng *rand.Rand) (lat, lng float64) {
	switch rng.Intn(5) {
	case 0:
		lng = 180 - rng.Float64()*0.3
		if rng.Intn(2) == 0 {
			lng = -lng
		}
		return rng.Float64()*60 - 30, lng
	case 1:
		lat = 89.95 - rng.Float64()*0.3
		if rng.Intn(2) == 0 {
			lat = -lat
		}
		return lat, rng.Float64()*360 - 180
	case 2: // a corner of a random cell
		id, _ := geo.PointCell(rng.Float64()*170-85, rng.Float64()*360-180, 8+rng.Intn(8))
		b, _ := geo.CellBounds(id)
		k := rng.Intn(4)
		return b[k][0], b[k][1]
	}
	return rng.Float64()*170 - 85, rng.Float64()*360 - 180
}

// Destination moves d metres from lat, lng on bearing b (radians), on
// the sphere of geo.EarthRadiusM.
func Destination(lat, lng, d, b float64) (float64, float64) {
	const rad = math.Pi / 180
	ad := d / geo.EarthRadiusM
	la := math.Asin(math.Sin(lat*rad)*math.Cos(ad) + math.Cos(lat*rad)*math.Sin(ad)*math.Cos(b))
	ln := lng*rad + math.Atan2(math.Sin(b)*math.Sin(ad)*math.Cos(lat*rad), math.Cos(ad)-math.Sin(lat*rad)*math.Sin(la))
	return la / rad, math.Remainder(ln/rad, 360)
}

// Shape draws, around lat, lng, a circle of radius up to maxR metres
// (sometimes a point) or a star-shaped polygon of about that size,
// sometimes with a hole.
func Shape(rng *rand.Rand, lat, lng, maxR float64) *geo.Shape {
	for {
		if s := shape(rng, lat, lng, maxR); s != nil {
			return s
		}
	}
}

func shape(rng *rand.Rand, lat, lng, maxR float64) *geo.Shape {
	r := rng.Float64() * maxR
	if rng.Intn(2) == 0 {
		if rng.Intn(8) == 0 {
			r = 0
		}
		s, err := geo.NewCircle(lat, lng, r)
		if err != nil {
			panic(err)
		}
		return s
	}
	n := 3 + rng.Intn(10)
	ring := make([]geo.LatLng, n)
	for k := range ring {
		la, ln := Destination(lat, lng, (0.3+0.7*rng.Float64())*(r+50), 2*math.Pi*(float64(k)+0.8*rng.Float64())/float64(n))
		ring[k] = geo.LatLng{Lat: la, Lng: ln}
	}
	rings := geo.Rings{ring}
	if rng.Intn(3) == 0 {
		var hole []geo.LatLng
		for k := range 4 {
			la, ln := Destination(lat, lng, (r+50)*0.2, math.Pi/2*float64(k))
			hole = append(hole, geo.LatLng{Lat: la, Lng: ln})
		}
		rings = append(rings, hole)
	}
	s, err := geo.NewPolygons([]geo.Rings{rings}, 0)
	if err != nil {
		return nil // a hole that crossed a narrow star: draw again
	}
	return s
}
