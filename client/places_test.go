package client_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/seed84792017/cellcast/geo"
)

// Places for the geo tests, and the geometry to check their premises
// with (package geo, the broker's own: the client has none).

// upstate is a corner where four S2 cells of level 12 meet, in upstate
// New York: a small circle around it reaches into all four.
func upstate(t *testing.T) (lat, lng float64) {
	t.Helper()
	id, err := geo.PointCell(42.755, -75.81, 12)
	if err != nil {
		t.Fatal(err)
	}
	corners, err := geo.CellBounds(id)
	if err != nil {
		t.Fatal(err)
	}
	return corners[0][0], corners[0][1]
}

// offset moves a point north and east by metres (a flat Earth, close
// enough over a few kilometres).
func offset(lat, lng, north, east float64) (float64, float64) {
	const deg = 180 / (math.Pi * geo.EarthRadiusM)
	return lat + north*deg, lng + east*deg/math.Cos(lat*math.Pi/180)
}

// outsideInCover finds a point the circle does not reach that lies in
// one of the cells: one the cells suggest and exact geometry refuses.
func outsideInCover(t *testing.T, lat, lng, radiusM float64, cells []string) (float64, float64) {
	t.Helper()
	circle, err := geo.NewCircle(lat, lng, radiusM)
	if err != nil {
		t.Fatal(err)
	}
	for d := radiusM * 1.2; d < radiusM*10; d += radiusM / 4 {
		for b := 0.0; b < 360; b += 10 {
			s, c := math.Sincos(b * math.Pi / 180)
			plat, plng := offset(lat, lng, d*c, d*s)
			if inCircle(t, plat, plng, circle) {
				continue
			}
			id, err := geo.PointCell(plat, plng, geo.MaxLevel)
			if err != nil {
				t.Fatal(err)
			}
			for _, cell := range cells {
				if strings.HasPrefix(id.String(), cell+".") {
					return plat, plng
				}
			}
		}
	}
	t.Fatalf("no point outside the circle in its cells %v", cells)
	return 0, 0
}

func inCircle(t *testing.T, lat, lng float64, circle *geo.Shape) bool {
	t.Helper()
	p, err := geo.NewCircle(lat, lng, 0)
	if err != nil {
		t.Fatal(err)
	}
	return p.Intersects(circle)
}

// ring renders a closed GeoJSON Polygon of the given [lng, lat]
// vertices.
func ring(vertices ...[2]float64) []byte {
	b := []byte(`{"type":"Polygon","coordinates":[[`)
	for _, v := range append(vertices, vertices[0]) {
		b = fmt.Appendf(b, "[%v,%v],", v[0], v[1])
	}
	return append(b[:len(b)-1], "]]}"...)
}

// box is a GeoJSON Polygon from south-west to north-east.
func box(south, west, north, east float64) []byte {
	return ring([2]float64{west, south}, [2]float64{east, south}, [2]float64{east, north}, [2]float64{west, north})
}
