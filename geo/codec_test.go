package geo

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestBinaryRoundTrip(t *testing.T) {
	nyc := LatLng{Lat: 40.712345678901234, Lng: -74.00597}
	c, _ := NewCircle(nyc.Lat, nyc.Lng, 250.5)
	p, _ := NewPolygons([]Rings{{square(nyc, 1000), square(nyc, 300)}, {square(offset(nyc, 9000, 1), 100)}}, 0)
	for _, s := range []*Shape{c, p} {
		b := s.AppendBinary([]byte("x"))
		if len(b)-1 != s.BinarySize() {
			t.Fatalf("size %d, BinarySize %d", len(b)-1, s.BinarySize())
		}
		got, rest, err := DecodeShape(append(b[1:], 7))
		if err != nil || !bytes.Equal(rest, []byte{7}) {
			t.Fatalf("%v, rest %v", err, rest)
		}
		if !bytes.Equal(got.AppendBinary(nil), b[1:]) || got.Kind() != s.Kind() || got.Vertices() != s.Vertices() {
			t.Fatalf("round trip changed the shape")
		}
	}
	for _, bad := range [][]byte{nil, {3}, {1, 0, 0}, {2, 0}, {2, 1, 1, 2}, append([]byte{1}, bytes.Repeat([]byte{0xff}, 24)...)} {
		if _, _, err := DecodeShape(bad); err == nil {
			t.Errorf("%x decoded", bad)
		}
	}
}

func TestGeoJSON(t *testing.T) {
	ok := []string{
		`{"type":"Polygon","coordinates":[[[-74,40.7],[-73.9,40.7],[-73.9,40.8],[-74,40.8],[-74,40.7]]]}`,
		`{"type":"Polygon","bbox":[0,0,1,1],"coordinates":[[[0,0,5],[1,0,5],[1,1,5],[0,0,5]]],"name":"x"}`,
		`{"type":"MultiPolygon","coordinates":[[[[0,0],[1,0],[1,1],[0,0]]],[[[10,0],[11,0],[11,1],[10,0]]]]}`,
		`{"type":"Polygon","coordinates":[[[179.5,0],[-179.5,0],[-179.5,1],[179.5,1],[179.5,0]]]}`,
	}
	for _, s := range ok {
		sh, err := ParseGeoJSON([]byte(s), 0)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		again, err := ParseGeoJSON(sh.AppendGeoJSON(nil), 0)
		if err != nil || !bytes.Equal(again.AppendBinary(nil), sh.AppendBinary(nil)) {
			t.Fatalf("%s: back %s: %v", s, sh.AppendGeoJSON(nil), err)
		}
	}
	// Across the antimeridian the polygon is the narrow one.
	sh, _ := ParseGeoJSON([]byte(ok[3]), 0)
	in, _ := NewCircle(0.5, 180, 0)
	out, _ := NewCircle(0.5, 0, 0)
	if !sh.Intersects(in) || sh.Intersects(out) {
		t.Error("antimeridian polygon taken the long way round")
	}
	bad := map[string]string{
		`[]`:                                   "not a GeoJSON object",
		`{"type":"Point","coordinates":[0,0]}`: "want Polygon",
		`{"type":"Polygon"}`:                   "without coordinates",
		`{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1]]]}`:                     "at least 4",
		`{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1]]]}`:               "not closed",
		`{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1],[1,1.5],[0,0]]]}`: "",
		`{"type":"Polygon","coordinates":[[[0,0],[1,1],[1,0],[0,1],[0,0]]]}`:         "cross",
		`{"type":"Polygon","coordinates":[[[0,0],[1],[1,1],[0,0]]]}`:                 "numbers",
		`{"type":"Polygon","coordinates":[[[0,0],null,[1,1],[0,0]]]}`:                "null",
		`{"type":"Polygon","coordinates":[[[0,95],[1,0],[1,1],[0,95]]]}`:             "lat",
		`{"type":"Polygon","coordinates":"x"}`:                                       "array",
	}
	for s, want := range bad {
		_, err := ParseGeoJSON([]byte(s), 0)
		if want == "" {
			continue // valid or not, it must not panic
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", s, err, want)
		}
	}
}

func FuzzGeoJSON(f *testing.F) {
	f.Add([]byte(`{"type":"Polygon","coordinates":[[[-74,40.7],[-73.9,40.7],[-73.9,40.8],[-74,40.8],[-74,40.7]]]}`))
	f.Add([]byte(`{"type":"MultiPolygon","coordinates":[[[[0,0],[1,0],[1,1],[0,0]]],[[[10,0],[11,0],[11,1],[10,0]],[[10.2,0.1],[10.5,0.1],[10.5,0.2],[10.2,0.1]]]]}`))
	f.Add([]byte(`{"type":"Polygon","coordinates":[[[0,0],[1,1],[1,0],[0,1],[0,0]]]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseGeoJSON(data, 0)
		if err != nil {
			return
		}
		// What was accepted comes back the same through both encodings,
		// and its geometry can be asked about.
		b := s.AppendBinary(nil)
		d, rest, err := DecodeShape(b)
		if err != nil || len(rest) != 0 || !bytes.Equal(d.AppendBinary(nil), b) {
			t.Fatalf("binary round trip: %v", err)
		}
		j, err := ParseGeoJSON(s.AppendGeoJSON(nil), 0)
		if err != nil || !bytes.Equal(j.AppendBinary(nil), b) {
			t.Fatalf("GeoJSON round trip: %v", err)
		}
		pt, _ := NewCircle(0, 0, 1000)
		s.Intersects(pt)
		s.Intersects(s)
		if _, err := s.Cover(8, DefaultLevel); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzDecodeShape(f *testing.F) {
	c, _ := NewCircle(1, 2, 3)
	p, _ := ParseGeoJSON([]byte(`{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}`), 0)
	f.Add(c.AppendBinary(nil))
	f.Add(p.AppendBinary(nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, _, err := DecodeShape(data)
		if err != nil {
			return
		}
		// A damaged shape may mean anything, but asking about it must
		// not panic.
		pt, _ := NewCircle(0.5, 0.5, 10)
		s.Intersects(pt)
		pt.Intersects(s)
		s.IntersectsCell([]uint32{1, 2})
		if r := s.radiusM; math.IsNaN(r) {
			t.Fatal("NaN radius decoded")
		}
	})
}
