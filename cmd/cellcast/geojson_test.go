package main

import (
	"strings"
	"testing"
)

// TestGeometry: the polygon is found in each form --polygon takes, and
// every other form is refused with a message that says what was found.
func TestGeometry(t *testing.T) {
	const poly = `{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}`
	const multi = `{"type":"MultiPolygon","coordinates":[[[[0,0],[1,0],[1,1],[0,0]]]]}`
	for _, c := range []struct{ in, want, err string }{
		{poly, poly, ""},
		{multi, multi, ""},
		{`{"type":"Feature","properties":{"a":1},"geometry":` + poly + `}`, poly, ""},
		{`{"type":"FeatureCollection","features":[{"type":"Feature","geometry":` + multi + `}]}`, multi, ""},
		{`{"type":"FeatureCollection","features":[]}`, "", "a FeatureCollection of 0 features: want exactly one"},
		{`{"type":"FeatureCollection","features":[{"type":"Feature","geometry":` + poly + `},{"type":"Feature","geometry":` + poly + `}]}`, "", "of 2 features"},
		{`{"type":"FeatureCollection","features":[` + poly + `]}`, "", `holding a "Polygon", not a Feature`},
		{`{"type":"Feature","geometry":null}`, "", "a Feature without a geometry object"},
		{`{"type":"Feature"}`, "", "a Feature without a geometry object"},
		{`{"type":"Feature","geometry":{"type":"LineString","coordinates":[[0,0],[1,1]]}}`, "", `geometry is a "LineString"`},
		{`{"type":"Point","coordinates":[0,0]}`, "", "a GeoJSON Point: want a Polygon or MultiPolygon"},
		{`{"coordinates":[]}`, "", "without a GeoJSON type"},
		{`[1,2]`, "", "not a GeoJSON object"},
		{`{"type":`, "", "not a GeoJSON object"},
		{``, "", "not a GeoJSON object"},
	} {
		got, err := geometry([]byte(c.in))
		switch {
		case c.err == "" && (err != nil || string(got) != c.want):
			t.Errorf("%s: %s, %v; want %s", c.in, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %s, %v; want an error with %q", c.in, got, err, c.err)
		}
	}
	if _, err := readGeometry("-", nil); err == nil {
		t.Error("stdin read without a stdin")
	}
	if _, err := readGeometry("-", strings.NewReader(strings.Repeat(" ", maxGeoJSON+1))); err == nil || !strings.Contains(err.Error(), "more than 8 MiB") {
		t.Errorf("an oversized file: %v", err)
	}
}

func TestPolygonSummary(t *testing.T) {
	for in, want := range map[string]string{
		`{"type":"Polygon","coordinates":[[[0,0],[4,0],[4,4],[0,4],[0,0]],[[1,1],[2,1],[2,2],[1,1]]]}`:    "polygon (7 vertices)",
		`{"type":"Polygon","coordinates":[[[0,0],[4,0],[4,4,9]]]}`:                                        "polygon (3 vertices)", // open, with an altitude
		`{"type":"MultiPolygon","coordinates":[[[[0,0],[1,0],[1,1],[0,0]]],[[[5,5],[6,5],[6,6],[5,5]]]]}`: "2 polygons (6 vertices)",
		`{"type":"Polygon","coordinates":"nonsense"}`:                                                     "polygon",
		`{"type":"Circle"}`: "polygon",
		`not json`:          "polygon",
	} {
		if got := polygonSummary([]byte(in)); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}

func TestParseNear(t *testing.T) {
	for _, c := range []struct {
		in       string
		lat, lng float64
		radius   float64 // -1: none
		ok       bool
	}{
		{"40.758,-73.9855,1000", 40.758, -73.9855, 1000, true},
		{" 48.8606 , 2.3376 ", 48.8606, 2.3376, -1, true},
		{"1,2,0", 1, 2, 0, true}, // the broker says what is wrong with 0
		{"40.7", 0, 0, 0, false},
		{"40.7,x", 0, 0, 0, false},
		{"1,2,3,4", 0, 0, 0, false},
		{"", 0, 0, 0, false},
	} {
		lat, lng, radius, err := parseNear(c.in)
		r := -1.0
		if radius != nil {
			r = *radius
		}
		if (err == nil) != c.ok || c.ok && (lat != c.lat || lng != c.lng || r != c.radius) {
			t.Errorf("%q: %v %v %v %v", c.in, lat, lng, r, err)
		}
	}
}
