package geo

import "testing"

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
