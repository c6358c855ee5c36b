package geo

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The binary form of a shape, as stored records and messages between
// nodes carry it (little endian):
//
//	kind     byte: 1 circle, 2 polygons
//	circle   lat, lng, radius in metres: float64 each
//	polygons uvarint polygon count; for each, uvarint ring count; for
//	         each ring, uvarint vertex count and its vertices, lat and lng
//	         float64 each
//
// Coordinates keep every bit of what the client sent, so a shape comes
// back to clients exactly as it was given.

// AppendBinary appends the shape's binary form to dst.
func (s *Shape) AppendBinary(dst []byte) []byte {
	dst = append(dst, byte(s.kind))
	f := func(v float64) { dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v)) }
	if s.kind == Circle {
		f(s.lat)
		f(s.lng)
		f(s.radiusM)
		return dst
	}
	dst = binary.AppendUvarint(dst, uint64(len(s.polys)))
	for _, rings := range s.polys {
		dst = binary.AppendUvarint(dst, uint64(len(rings)))
		for _, r := range rings {
			dst = binary.AppendUvarint(dst, uint64(len(r)))
			for _, v := range r {
				f(v.Lat)
				f(v.Lng)
			}
		}
	}
	return dst
}

// BinarySize is the length of the shape's binary form.
func (s *Shape) BinarySize() int {
	if s.kind == Circle {
		return 25
	}
	n := 1 + uvarintLen(len(s.polys))
	for _, rings := range s.polys {
		n += uvarintLen(len(rings))
		for _, r := range rings {
			n += uvarintLen(len(r)) + 16*len(r)
		}
	}
	return n
}

func uvarintLen(n int) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], uint64(n))
}

// ErrCorrupt is matched by errors decoding a damaged shape.
var ErrCorrupt = errors.New("geo: corrupt shape")

// DecodeShape reads a shape from the front of b and returns the rest. It
// checks what S2 needs to work on the shape safely (positions in range,
// rings of three distinct consecutive vertices, none antipodal, counts
// within MaxVertices) but not what NewPolygons checked when the shape was
// made (crossings, nesting): that is quadratic, and the writer did it.
func DecodeShape(b []byte) (*Shape, []byte, error) {
	if len(b) == 0 {
		return nil, nil, fmt.Errorf("%w: empty", ErrCorrupt)
	}
	kind, b := Kind(b[0]), b[1:]
	f := func() (float64, bool) {
		if len(b) < 8 {
			return 0, false
		}
		v := math.Float64frombits(binary.LittleEndian.Uint64(b))
		b = b[8:]
		return v, true
	}
	switch kind {
	case Circle:
		lat, ok1 := f()
		lng, ok2 := f()
		r, ok3 := f()
		if !ok1 || !ok2 || !ok3 {
			return nil, nil, fmt.Errorf("%w: truncated circle", ErrCorrupt)
		}
		s, err := NewCircle(lat, lng, r)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return s, b, nil
	case Polygon:
	default:
		return nil, nil, fmt.Errorf("%w: kind %d", ErrCorrupt, kind)
	}
	count := func() (int, bool) {
		n, m := binary.Uvarint(b)
		if m <= 0 || n > MaxVertices {
			return 0, false
		}
		b = b[m:]
		return int(n), true
	}
	np, ok := count()
	if !ok || np == 0 {
		return nil, nil, fmt.Errorf("%w: polygon count", ErrCorrupt)
	}
	s := &Shape{kind: Polygon, polys: make([]Rings, 0, min(np, 16))}
	for range np {
		nr, ok := count()
		if !ok || nr == 0 {
			return nil, nil, fmt.Errorf("%w: ring count", ErrCorrupt)
		}
		rings := make(Rings, 0, min(nr, 16))
		for range nr {
			nv, ok := count()
			if !ok || nv < 3 || s.vertices+nv > MaxVertices || len(b) < 16*nv {
				return nil, nil, fmt.Errorf("%w: vertex count", ErrCorrupt)
			}
			r := make([]LatLng, nv)
			for k := range r {
				r[k].Lat, _ = f()
				r[k].Lng, _ = f()
				if CheckLatLng(r[k].Lat, r[k].Lng) != nil {
					return nil, nil, fmt.Errorf("%w: vertex out of range", ErrCorrupt)
				}
			}
			if err := checkEdges(r); err != nil {
				return nil, nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
			}
			s.vertices += nv
			rings = append(rings, r)
		}
		s.polys = append(s.polys, rings)
	}
	return s, b, nil
}

// checkEdges refuses what S2 cannot build a loop from: an edge whose ends
// are the same point or antipodal.
func checkEdges(r []LatLng) error {
	for k := range r {
		a, b := pointOf(r[k]), pointOf(r[(k+1)%len(r)])
		if a == b || a.Distance(b) > maxEdge {
			return fmt.Errorf("degenerate edge %d", k)
		}
	}
	return nil
}
