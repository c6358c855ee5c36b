package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// maxGeoJSON bounds what --polygon and --within read: far more than the
// broker takes in a frame, so a larger file is a mistake.
const maxGeoJSON = 8 << 20

// readGeometry reads a GeoJSON file (path "-": stdin) and returns the
// Polygon or MultiPolygon geometry it holds: the file's object itself, a
// Feature's geometry, or the geometry of a FeatureCollection's only
// feature. The broker checks the geometry itself.
func readGeometry(path string, stdin io.Reader) ([]byte, error) {
	var b []byte
	var err error
	if path == "-" {
		if stdin == nil {
			return nil, errors.New("no standard input to read")
		}
		b, err = io.ReadAll(io.LimitReader(stdin, maxGeoJSON+1))
	} else {
		var f *os.File
		if f, err = os.Open(path); err != nil {
			return nil, err
		}
		defer f.Close()
		b, err = io.ReadAll(io.LimitReader(f, maxGeoJSON+1))
	}
	if err != nil {
		return nil, err
	}
	if len(b) > maxGeoJSON {
		return nil, fmt.Errorf("more than %d MiB", maxGeoJSON>>20)
	}
	return geometry(b)
}

// geoObject is the part of a GeoJSON object that says what it holds.
type geoObject struct {
	Type     string          `json:"type"`
	Geometry json.RawMessage `json:"geometry"`
	Features []geoObject     `json:"features"`
}

// geometry finds the polygon geometry in a GeoJSON text.
func geometry(b []byte) ([]byte, error) {
	var o geoObject
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("not a GeoJSON object: %v", err)
	}
	switch o.Type {
	case "Polygon", "MultiPolygon":
		return b, nil
	case "Feature":
		return featureGeometry(o)
	case "FeatureCollection":
		if len(o.Features) != 1 {
			return nil, fmt.Errorf("a FeatureCollection of %d features: want exactly one", len(o.Features))
		}
		return featureGeometry(o.Features[0])
	case "":
		return nil, errors.New("a JSON object without a GeoJSON type")
	}
	return nil, fmt.Errorf("a GeoJSON %s: want a Polygon or MultiPolygon, a Feature of one, or a FeatureCollection of exactly one such Feature", o.Type)
}

func featureGeometry(f geoObject) ([]byte, error) {
	if f.Type != "Feature" {
		return nil, fmt.Errorf("a FeatureCollection holding a %q, not a Feature", f.Type)
	}
	var g geoObject
	if len(f.Geometry) == 0 || string(f.Geometry) == "null" || json.Unmarshal(f.Geometry, &g) != nil {
		return nil, errors.New("a Feature without a geometry object")
	}
	if g.Type != "Polygon" && g.Type != "MultiPolygon" {
		return nil, fmt.Errorf("a Feature whose geometry is a %q: want a Polygon or MultiPolygon", g.Type)
	}
	return f.Geometry, nil
}

// polygonSummary says what a polygon geometry holds in a few words:
// "polygon (5 vertices)", "2 polygons (12 vertices)". A ring's closing
// repeat of its first position is not a vertex.
func polygonSummary(g []byte) string {
	var o struct {
		Type        string          `json:"type"`
		Coordinates json.RawMessage `json:"coordinates"`
	}
	if json.Unmarshal(g, &o) != nil {
		return "polygon"
	}
	var polys [][][][]float64
	switch o.Type {
	case "Polygon":
		var p [][][]float64
		if json.Unmarshal(o.Coordinates, &p) != nil {
			return "polygon"
		}
		polys = [][][][]float64{p}
	case "MultiPolygon":
		if json.Unmarshal(o.Coordinates, &polys) != nil {
			return "polygon"
		}
	default:
		return "polygon"
	}
	n := 0
	for _, rings := range polys {
		for _, r := range rings {
			n += len(r)
			if len(r) > 1 && samePosition(r[0], r[len(r)-1]) {
				n--
			}
		}
	}
	what := "polygon"
	if len(polys) != 1 {
		what = fmt.Sprintf("%d polygons", len(polys))
	}
	return fmt.Sprintf("%s (%d vertices)", what, n)
}

func samePosition(a, b []float64) bool {
	return len(a) >= 2 && len(b) >= 2 && a[0] == b[0] && a[1] == b[1]
}
