package geo

import (
	"math"
	"testing"
)

var sin, cos = math.Sin, math.Cos

func BenchmarkDecodeCircle(b *testing.B) {
	s, _ := NewCircle(40.758, -73.9855, 1200)
	buf := s.AppendBinary(nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := DecodeShape(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIntersectsCircles(b *testing.B) {
	s, _ := NewCircle(40.758, -73.9855, 1200)
	o, _ := NewCircle(40.768, -73.9755, 300)
	b.ReportAllocs()
	for b.Loop() {
		if !s.Intersects(o) {
			b.Fatal("apart")
		}
	}
}

func BenchmarkNewPolygon1024(b *testing.B) {
	ring := make([]LatLng, 1024)
	for k := range ring {
		a := 2 * 3.141592653589793 * float64(k) / float64(len(ring))
		ring[k] = LatLng{Lat: 40.7 + 0.05*sin(a), Lng: -74 + 0.05*cos(a)}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewPolygons([]Rings{{ring}}, 0); err != nil {
			b.Fatal(err)
		}
	}
}
