package geo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// GeoJSON (RFC 7946) geometries of type Polygon and MultiPolygon: what
// clients send and receive. Positions are [longitude, latitude] with an
// optional altitude, which is ignored; members other than type and
// coordinates (bbox, foreign members) are ignored too.

// ParseGeoJSON reads a Polygon or MultiPolygon geometry object and checks
// it as NewPolygons does, with at most maxVertices.
func ParseGeoJSON(data []byte, maxVertices int) (*Shape, error) {
	var g struct {
		Type        string          `json:"type"`
		Coordinates json.RawMessage `json:"coordinates"`
	}
	if err := json.Unmarshal(data, &g); err != nil {
		return nil, shapeErr("not a GeoJSON object: %v", err)
	}
	if len(g.Coordinates) == 0 {
		return nil, shapeErr("GeoJSON %s without coordinates", typeName(g.Type))
	}
	var polys [][][][]float64
	switch g.Type {
	case "Polygon":
		var p [][][]float64
		if err := strictCoords(g.Coordinates, &p); err != nil {
			return nil, shapeErr("Polygon coordinates must be an array of rings of [lng, lat] positions: %v", err)
		}
		polys = [][][][]float64{p}
	case "MultiPolygon":
		if err := strictCoords(g.Coordinates, &polys); err != nil {
			return nil, shapeErr("MultiPolygon coordinates must be an array of polygons, each an array of rings of [lng, lat] positions: %v", err)
		}
	default:
		return nil, shapeErr("GeoJSON type %s: want Polygon or MultiPolygon", typeName(g.Type))
	}
	total := 0
	rings := make([]Rings, len(polys))
	for i, p := range polys {
		rings[i] = make(Rings, len(p))
		for j, ring := range p {
			if len(ring) < 4 {
				return nil, shapeErr("polygon %d ring %d has %d positions: a closed ring needs at least 4", i, j, len(ring))
			}
			if !samePos(ring[0], ring[len(ring)-1]) {
				return nil, shapeErr("polygon %d ring %d is not closed: its last position must repeat its first", i, j)
			}
			if total += len(ring); total > 2*MaxVertices {
				return nil, shapeErr("more than %d vertices", MaxVertices) // NewPolygons counts them exactly
			}
			rings[i][j] = make([]LatLng, len(ring))
			for k, pos := range ring {
				if len(pos) < 2 || len(pos) > 3 {
					return nil, shapeErr("polygon %d ring %d position %d has %d numbers: want [lng, lat] or [lng, lat, alt]", i, j, k, len(pos))
				}
				rings[i][j][k] = LatLng{Lat: pos[1], Lng: pos[0]}
			}
		}
	}
	return NewPolygons(rings, maxVertices)
}

// strictCoords decodes coordinates, refusing nulls inside them.
func strictCoords(raw json.RawMessage, v any) error {
	if bytes.Contains(raw, []byte("null")) {
		return fmt.Errorf("null in coordinates")
	}
	return json.Unmarshal(raw, v)
}

func samePos(a, b []float64) bool {
	return len(a) >= 2 && len(b) >= 2 && a[0] == b[0] && a[1] == b[1]
}

func typeName(t string) string {
	if t == "" {
		return "(no type)"
	}
	return strconv.Quote(t)
}

// AppendGeoJSON appends a polygon shape as a GeoJSON geometry (Polygon
// for one polygon, MultiPolygon for more), each ring closed again; a
// circle appends nothing (clients get its centre and radius instead).
func (s *Shape) AppendGeoJSON(dst []byte) []byte {
	if s.kind != Polygon {
		return dst
	}
	multi := len(s.polys) > 1
	if multi {
		dst = append(dst, `{"type":"MultiPolygon","coordinates":[`...)
	} else {
		dst = append(dst, `{"type":"Polygon","coordinates":`...)
	}
	for i, rings := range s.polys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '[')
		for j, r := range rings {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '[')
			for k := 0; k <= len(r); k++ {
				v := r[k%len(r)]
				if k > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, '[')
				dst = strconv.AppendFloat(dst, v.Lng, 'g', -1, 64)
				dst = append(dst, ',')
				dst = strconv.AppendFloat(dst, v.Lat, 'g', -1, 64)
				dst = append(dst, ']')
			}
			dst = append(dst, ']')
		}
		dst = append(dst, ']')
	}
	if multi {
		dst = append(dst, ']')
	}
	return append(dst, '}')
}
