package client

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"
)

// A polygon travels as a GeoJSON geometry (RFC 7946): JSON text in a JSON
// frame, the CBOR of that JSON's value in a CBOR frame. The client keeps
// it as JSON text either way, so a program reads one form.

// geoJSON is a GeoJSON value on the wire, held as JSON text.
type geoJSON []byte

// MarshalJSON sends the text as it is (encoding/json checks and
// compacts it).
func (g geoJSON) MarshalJSON() ([]byte, error) { return g, nil }

// MarshalCBOR sends the CBOR of the text's value. Key order is lost,
// which a GeoJSON reader does not mind; numbers go through float64, as the
// broker reads them.
func (g geoJSON) MarshalCBOR() ([]byte, error) {
	var v any
	if err := json.Unmarshal(g, &v); err != nil {
		return nil, err
	}
	return cbor.Marshal(v)
}

// UnmarshalJSON keeps a copy of the text; null is no value.
func (g *geoJSON) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*g = nil
		return nil
	}
	*g = bytes.Clone(b)
	return nil
}

// UnmarshalCBOR renders a CBOR value as JSON text; null is no value.
func (g *geoJSON) UnmarshalCBOR(b []byte) error {
	r := cborReader{b: b}
	v, ok := r.geoJSON()
	if !ok || r.i != len(b) {
		return fmt.Errorf("%w: a GeoJSON value JSON cannot hold: %.64x", ErrProtocol, b)
	}
	*g = v
	return nil
}

// checkGeoJSON is the client's only check of a polygon: a JSON object.
// The broker checks the geometry and names what is wrong with it.
func checkGeoJSON(b []byte) error {
	t := bytes.TrimLeft(b, " \t\r\n")
	if len(t) == 0 || t[0] != '{' || !json.Valid(t) {
		return fmt.Errorf("%w: polygon: not a JSON object (want a GeoJSON Polygon or MultiPolygon geometry): %.40q", ErrBadLocation, b)
	}
	return nil
}

// geoJSONDepth bounds the nesting of a transcoded value: a MultiPolygon
// is four arrays in an object. fxamacker/cbor allows 32 levels in all, so
// this bound, well under it, keeps the fast path and the fallback alike.
const geoJSONDepth = 16

// geoJSON reads a CBOR value at the reader as JSON text; CBOR null is
// nil. Values JSON has no form for (byte strings, tags, undefined, NaN,
// infinities, non-text keys) and indefinite lengths are refused.
func (r *cborReader) geoJSON() ([]byte, bool) {
	if r.i < len(r.b) && r.b[r.i] == 0xf6 {
		r.i++
		return nil, true
	}
	out, ok := r.json(nil, 0)
	if !ok {
		return nil, false
	}
	if out == nil {
		out = []byte{} // a value, not null
	}
	return out, true
}

// json appends the CBOR value at the reader to dst as JSON. Numbers are
// rendered as the broker renders a polygon's (strconv's shortest 'g'),
// so a frame decodes to the same text in either encoding.
func (r *cborReader) json(dst []byte, depth int) ([]byte, bool) {
	if depth > geoJSONDepth || r.i >= len(r.b) {
		return dst, false
	}
	switch c := r.b[r.i]; {
	case c == 0xf4:
		r.i++
		return append(dst, "false"...), true
	case c == 0xf5:
		r.i++
		return append(dst, "true"...), true
	case c == 0xf6:
		r.i++
		return append(dst, "null"...), true
	case c >= 0xf9 && c <= 0xfb:
		f, ok := r.float()
		if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
			return dst, false
		}
		return strconv.AppendFloat(dst, f, 'g', -1, 64), true
	}
	major, n, ok := r.head()
	if !ok {
		return dst, false
	}
	switch major {
	case 0:
		return strconv.AppendUint(dst, n, 10), true
	case 1: // -1-n, which may be below int64's range
		if n == math.MaxUint64 {
			return append(dst, "-18446744073709551616"...), true
		}
		return strconv.AppendUint(append(dst, '-'), n+1, 10), true
	case 3:
		if n > uint64(len(r.b)-r.i) || !utf8.Valid(r.b[r.i:r.i+int(n)]) {
			return dst, false
		}
		dst = appendJSONString(dst, r.b[r.i:r.i+int(n)])
		r.i += int(n)
		return dst, true
	case 4, 5:
		if n > uint64(len(r.b)-r.i) { // every item takes a byte at least
			return dst, false
		}
		open, end := byte('['), byte(']')
		if major == 5 {
			open, end = '{', '}'
		}
		dst = append(dst, open)
		for k := range n {
			if k > 0 {
				dst = append(dst, ',')
			}
			if major == 5 {
				i, j, ok := r.text()
				if !ok {
					return dst, false
				}
				dst = append(appendJSONString(dst, r.b[i:j]), ':')
			}
			if dst, ok = r.json(dst, depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, end), true
	}
	return dst, false // byte strings, tags, simple values
}

// float reads a half, single or double precision float.
func (r *cborReader) float() (float64, bool) {
	size := [...]int{2, 4, 8}[r.b[r.i]-0xf9]
	if len(r.b)-r.i-1 < size {
		return 0, false
	}
	b := r.b[r.i+1 : r.i+1+size]
	r.i += 1 + size
	switch size {
	case 2:
		return halfFloat(binary.BigEndian.Uint16(b)), true
	case 4:
		return float64(math.Float32frombits(binary.BigEndian.Uint32(b))), true
	}
	return math.Float64frombits(binary.BigEndian.Uint64(b)), true
}

// halfFloat is an IEEE 754 half-precision float's value.
func halfFloat(h uint16) float64 {
	exp, mant := int(h>>10&0x1f), float64(h&0x3ff)
	var v float64
	switch exp {
	case 0:
		v = math.Ldexp(mant, -24)
	case 0x1f:
		v = math.Inf(1)
		if mant != 0 {
			v = math.NaN()
		}
	default:
		v = math.Ldexp(mant+1024, exp-25)
	}
	if h&0x8000 != 0 {
		v = -v
	}
	return v
}

// appendJSONString appends s (valid UTF-8) as a JSON string.
func appendJSONString(dst, s []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
