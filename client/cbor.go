package client

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"

	"github.com/seed84792017/cellcast/protocol"
)

// Encoding is a WebSocket connection's wire encoding (docs/protocol.md,
// "Encodings"). Both carry the same frames, field for field.
type Encoding int

const (
	// EncodingJSON is text frames of JSON, the default.
	EncodingJSON Encoding = iota
	// EncodingCBOR is binary frames of CBOR both ways, the subprotocol
	// cellcast.cbor: cheaper to decode. NATS always speaks JSON.
	EncodingCBOR
)

// subprotocolCBOR is the WebSocket subprotocol of EncodingCBOR.
const subprotocolCBOR = protocol.SubprotocolCBOR

// As with JSON, notifications are decoded by hand in the shape the
// broker renders them (cbor.go of the gateway: definite lengths, the
// fields in the JSON's order), and anything else by fxamacker/cbor, which
// fuzz targets hold the hand decoder to.

// cborDecoder reads frames strictly: a duplicate key, which encoding/json
// would let the last win, is an error.
var cborDecoder = func() cbor.DecMode {
	m, err := cbor.DecOptions{DupMapKey: cbor.DupMapKeyEnforcedAPF}.DecMode()
	if err != nil {
		panic(err) // constant options
	}
	return m
}()

// cborNotePrefix begins every notification the broker renders: a map of
// four, "op": "notification", then "sid"'s key.
var cborNotePrefix = []byte(protocol.CBORNotePrefix)

// splitNotificationCBOR returns a notification frame's sid, seq and
// publication; false means "not in the broker's shape", not "invalid".
func splitNotificationCBOR(b []byte) (sid []byte, seq int64, pub []byte, ok bool) {
	rest, ok := bytes.CutPrefix(b, cborNotePrefix)
	if !ok {
		return nil, 0, nil, false
	}
	r := cborReader{b: rest}
	i, j, ok := r.text()
	if !ok || j == i || !r.key(protocol.FieldSeq) {
		return nil, 0, nil, false
	}
	major, n, ok := r.head()
	if !ok || major != 0 || n > math.MaxInt64 || !r.key(protocol.FieldPublication) {
		return nil, 0, nil, false
	}
	return rest[i:j], int64(n), rest[r.i:], true
}

// cborFrame is any frame, for fxamacker/cbor: a reply's fields, and a
// notification's.
type cborFrame struct {
	wireReply
	Results     []cbor.RawMessage `json:"results"`
	Recent      []cbor.RawMessage `json:"recent"`
	Seq         int64             `json:"seq"`
	Prev        *int64            `json:"prev"`
	Publication cbor.RawMessage   `json:"publication"`
}

// decodeFrameCBOR reads a frame the fast path did not take, with a
// reply's list decoded (err set with a frame: the list was unreadable).
func decodeFrameCBOR(data []byte) (*cborFrame, error) {
	f := &cborFrame{}
	if err := cborDecoder.Unmarshal(data, f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	list := f.Results
	if f.Op == protocol.OpPublished {
		list = f.Recent
	}
	f.Results, f.Recent = nil, nil
	if len(list) == 0 {
		return f, nil
	}
	f.pubs = make([]Publication, len(list))
	for i, b := range list {
		if err := decodePublicationCBOR(b, &f.pubs[i], nil); err != nil {
			f.pubs = nil
			return f, err
		}
	}
	return f, nil
}

// decodePublicationCBOR decodes a publication map.
func decodePublicationCBOR(b []byte, p *Publication, stamps *stampCache) error {
	r := cborReader{b: b, stamps: stamps}
	if r.publication(p) && r.i == len(b) {
		return nil
	}
	return decodePublicationCBORSlow(b, p)
}

func decodePublicationCBORSlow(b []byte, p *Publication) error {
	var w wirePublication
	if err := cborDecoder.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("%w: publication: %v", ErrProtocol, err)
	}
	return w.to(p)
}

// cborReader reads the definite-length CBOR the broker writes.
type cborReader struct {
	b      []byte
	i      int
	stamps *stampCache // nil: none
}

// head reads an item's head: its major type and argument. Indefinite
// lengths and the reserved forms are "not that shape".
func (r *cborReader) head() (major byte, n uint64, ok bool) {
	if r.i >= len(r.b) {
		return 0, 0, false
	}
	c := r.b[r.i]
	major, info := c>>5, c&0x1f
	r.i++
	if info < 24 {
		return major, uint64(info), true
	}
	if info > 27 {
		return 0, 0, false
	}
	size := 1 << (info - 24)
	if len(r.b)-r.i < size {
		return 0, 0, false
	}
	switch size {
	case 1:
		n = uint64(r.b[r.i])
	case 2:
		n = uint64(binary.BigEndian.Uint16(r.b[r.i:]))
	case 4:
		n = uint64(binary.BigEndian.Uint32(r.b[r.i:]))
	default:
		n = binary.BigEndian.Uint64(r.b[r.i:])
	}
	r.i += size
	return major, n, true
}

// text reads a text string and returns where it lies in b.
func (r *cborReader) text() (int, int, bool) {
	i, j, ok := r.rawText()
	return i, j, ok && utf8.Valid(r.b[i:j])
}

// rawText is text without the check of its UTF-8, for a key compared
// with the names it may have: one of those is valid.
func (r *cborReader) rawText() (int, int, bool) {
	major, n, ok := r.head()
	if !ok || major != 3 || n > uint64(len(r.b)-r.i) {
		return 0, 0, false
	}
	i, j := r.i, r.i+int(n)
	r.i = j
	return i, j, true
}

// key reads a text string equal to k.
func (r *cborReader) key(k string) bool {
	i, j, ok := r.rawText()
	return ok && string(r.b[i:j]) == k
}

// number reads an integer or a float64 as a float64.
func (r *cborReader) number() (float64, bool) {
	if r.i < len(r.b) && r.b[r.i] == 0xfb {
		if len(r.b)-r.i < 9 {
			return 0, false
		}
		f := math.Float64frombits(binary.BigEndian.Uint64(r.b[r.i+1:]))
		r.i += 9
		return f, true
	}
	major, n, ok := r.head()
	switch {
	case !ok:
		return 0, false
	case major == 0:
		return float64(n), true
	case major == 1:
		return -1 - float64(n), true
	}
	return 0, false
}

// The fields of a publication, one bit each, to refuse a repeated one
// as fxamacker/cbor does.
const (
	fPid = 1 << iota
	fUid
	fCell
	fTopic
	fTp
	fExpires
	fDesc
	fAttrs
	fLat
	fLng
	fRadius
	fPolygon
)

// publication reads a publication map of the broker's fields. Its
// strings are slices of one copy of the rest of b: one allocation for
// all of them.
func (r *cborReader) publication(p *Publication) bool {
	*p = Publication{}
	major, n, ok := r.head()
	if !ok || major != 5 || n > uint64(len(r.b)) {
		return false
	}
	var whole string
	base := r.i
	str := func() (string, bool) {
		i, j, ok := r.text()
		if !ok {
			return "", false
		}
		if whole == "" {
			whole = string(r.b[base:])
		}
		return whole[i-base : j-base], true
	}
	seen := 0
	var lat, lng, radius float64
	for range n {
		i, j, ok := r.rawText() // a key: the switch below names them all
		if !ok {
			return false
		}
		var bit int
		switch string(r.b[i:j]) {
		case protocol.FieldPid:
			bit = fPid
			p.Pid, ok = str()
		case protocol.FieldUid:
			bit = fUid
			p.Uid, ok = str()
		case protocol.FieldCell:
			bit = fCell
			p.Cell, ok = str()
		case protocol.FieldTopic:
			bit = fTopic
			p.Topic, ok = str()
		case protocol.FieldDesc:
			bit = fDesc
			p.Desc, ok = str()
		case protocol.FieldTp, protocol.FieldExpiresAt:
			bit = fTp
			t := &p.Tp
			if r.b[i] == 'e' {
				bit, t = fExpires, &p.ExpiresAt
			}
			// Unchecked UTF-8: a stamp the parser takes is ASCII.
			if i, j, ok = r.rawText(); ok {
				*t, ok = r.stamps.parse(r.b[i:j])
			}
		case protocol.FieldAttrs:
			bit = fAttrs
			p.Attrs, ok = r.strMap(str)
		case protocol.FieldLat:
			bit = fLat
			lat, ok = r.number()
		case protocol.FieldLng:
			bit = fLng
			lng, ok = r.number()
		case protocol.FieldRadiusM:
			bit = fRadius
			radius, ok = r.number()
		case protocol.FieldPolygon:
			bit = fPolygon
			var g []byte
			if g, ok = r.geoJSON(); ok && g != nil {
				p.Polygon = g
			}
		default:
			return false
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
	}
	if seen&(fLat|fLng) == fLat|fLng {
		p.At = &Place{Lat: lat, Lng: lng}
		if seen&fRadius != 0 {
			p.At.RadiusM = radius
		}
	}
	return true
}

// strMap reads a map of text to text, each read by str.
func (r *cborReader) strMap(str func() (string, bool)) (map[string]string, bool) {
	major, n, ok := r.head()
	if !ok || major != 5 || n > uint64(len(r.b)) {
		return nil, false
	}
	m := make(map[string]string, n)
	for range n {
		k, ok := str()
		if !ok {
			return nil, false
		}
		v, ok := str()
		if _, dup := m[k]; !ok || dup {
			return nil, false
		}
		m[k] = v
	}
	return m, true
}

// encodeRequest renders a request in tr's encoding.
func encodeRequest(tr transport, req *wireRequest) ([]byte, error) {
	if ws, ok := tr.(*wsConn); ok && ws.bin {
		return cbor.Marshal(req)
	}
	return json.Marshal(req)
}
