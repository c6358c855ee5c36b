package gateway

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"
	"github.com/gorilla/websocket"

	"github.com/seed84792017/cellcast/protocol"
)

// The binary encoding (docs/protocol.md, "Encodings"). A WebSocket client
// that asks for the subprotocol cellcast.cbor exchanges binary frames of
// CBOR (RFC 8949) both ways; any other client speaks JSON in text frames,
// as before. A CBOR frame is its JSON frame's value, field for field and
// in the same order: objects are maps with text keys, strings are text
// strings, integers are integers, other numbers float64. So the broker
// keeps one rendering, JSON, and transcodes its replies (appendCBOR); only
// notifications, most of what it sends, are rendered straight into CBOR
// around a cached CBOR publication. Requests go the other way: a CBOR
// request becomes its JSON, which the one request decoder reads.
const (
	SubprotocolJSON = protocol.SubprotocolJSON
	SubprotocolCBOR = protocol.SubprotocolCBOR
)

// subprotocol picks the first subprotocol the client asks for that the
// broker speaks; "" when it asks for none of them, which is JSON without
// naming one (RFC 6455 section 4.2.2: the client decides whether to go on).
func subprotocol(r *http.Request) string {
	for _, p := range websocket.Subprotocols(r) {
		if p == SubprotocolJSON || p == SubprotocolCBOR {
			return p
		}
	}
	return ""
}

// maxCBORDepth bounds the nesting of a transcoded value: the protocol's
// deepest is a reply, a list, a publication, its attrs.
const maxCBORDepth = 32

var errTranscode = errors.New("not a JSON value the CBOR encoding can carry")

// appendCBOR appends the CBOR of the JSON value src to dst. Maps and
// arrays get definite lengths, so a decoder knows every size in advance.
func appendCBOR(dst, src []byte) ([]byte, error) {
	t := transcoder{src: src, out: dst}
	if err := t.value(0); err != nil {
		return dst, err
	}
	t.space()
	if t.i != len(src) {
		return dst, fmt.Errorf("%w: data after the value at byte %d", errTranscode, t.i)
	}
	return t.out, nil
}

type transcoder struct {
	src []byte
	i   int
	out []byte
}

func (t *transcoder) space() {
	for t.i < len(t.src) && (t.src[t.i] == ' ' || t.src[t.i] == '\t' || t.src[t.i] == '\n' || t.src[t.i] == '\r') {
		t.i++
	}
}

func (t *transcoder) fail(what string) error {
	return fmt.Errorf("%w: %s at byte %d", errTranscode, what, t.i)
}

func (t *transcoder) value(depth int) error {
	t.space()
	if t.i >= len(t.src) {
		return t.fail("end of input")
	}
	switch c := t.src[t.i]; c {
	case '{', '[':
		if depth >= maxCBORDepth {
			return t.fail("too deep")
		}
		return t.container(depth)
	case '"':
		return t.str()
	case 't', 'f', 'n':
		for _, lit := range []struct {
			word string
			b    byte
		}{{"true", 0xf5}, {"false", 0xf4}, {"null", 0xf6}} {
			if len(t.src)-t.i >= len(lit.word) && string(t.src[t.i:t.i+len(lit.word)]) == lit.word {
				t.i += len(lit.word)
				t.out = append(t.out, lit.b)
				return nil
			}
		}
		return t.fail("unknown literal")
	}
	return t.number()
}

// container transcodes an object or an array. Its head is written once
// its count is known: one byte is kept for it, and the items move along
// when it needs more (only past 23 items).
func (t *transcoder) container(depth int) error {
	isMap := t.src[t.i] == '{'
	end, major := byte(']'), byte(4)
	if isMap {
		end, major = '}', 5
	}
	t.i++
	at := len(t.out)
	t.out = append(t.out, 0)
	n := uint64(0)
	t.space()
	if t.i < len(t.src) && t.src[t.i] == end {
		t.i++
	} else {
		for {
			if isMap {
				t.space()
				if t.i >= len(t.src) || t.src[t.i] != '"' {
					return t.fail("object key is not a string")
				}
				if err := t.str(); err != nil {
					return err
				}
				t.space()
				if t.i >= len(t.src) || t.src[t.i] != ':' {
					return t.fail("missing colon")
				}
				t.i++
			}
			if err := t.value(depth + 1); err != nil {
				return err
			}
			n++
			t.space()
			if t.i >= len(t.src) {
				return t.fail("unterminated container")
			}
			c := t.src[t.i]
			t.i++
			if c == end {
				break
			}
			if c != ',' {
				return t.fail("missing comma")
			}
		}
	}
	var head [9]byte
	h := appendHead(head[:0], major, n)
	if grow := len(h) - 1; grow > 0 {
		t.out = append(t.out, h[1:]...) // room; the copy below moves the items
		copy(t.out[at+len(h):], t.out[at+1:len(t.out)-grow])
	}
	copy(t.out[at:], h)
	return nil
}

// str transcodes a string. One without escapes is copied as it is; one
// with escapes is unquoted by encoding/json, whose rules it follows.
func (t *transcoder) str() error {
	start := t.i
	t.i++
	escaped := false
	for {
		if t.i >= len(t.src) {
			return t.fail("unterminated string")
		}
		c := t.src[t.i]
		t.i++
		if c == '"' {
			break
		}
		if c == '\\' {
			escaped = true
			t.i++
		} else if c < 0x20 {
			return t.fail("control character in a string")
		}
	}
	raw := t.src[start+1 : t.i-1]
	if escaped {
		var s string
		if err := json.Unmarshal(t.src[start:t.i], &s); err != nil {
			return t.fail("bad escape")
		}
		raw = []byte(s)
	} else if !utf8.Valid(raw) {
		return t.fail("invalid UTF-8")
	}
	t.out = appendHead(t.out, 3, uint64(len(raw)))
	t.out = append(t.out, raw...)
	return nil
}

// number transcodes a number: an integer that fits 64 bits as a CBOR
// integer, anything else as a float64.
func (t *transcoder) number() error {
	start, integer := t.i, true
	for t.i < len(t.src) {
		c := t.src[t.i]
		if c == '.' || c == 'e' || c == 'E' || c == '+' {
			integer = false
		} else if c != '-' && (c < '0' || c > '9') {
			break
		}
		t.i++
	}
	tok := string(t.src[start:t.i])
	if tok == "" || tok[0] != '-' && (tok[0] < '0' || tok[0] > '9') {
		return t.fail("unexpected character")
	}
	if integer {
		if n, err := strconv.ParseInt(tok, 10, 64); err == nil {
			t.out = appendInt(t.out, n)
			return nil
		}
	}
	f, err := strconv.ParseFloat(tok, 64)
	if err != nil {
		return t.fail("bad number")
	}
	t.out = append(t.out, 0xfb)
	t.out = binary.BigEndian.AppendUint64(t.out, math.Float64bits(f))
	return nil
}

// appendHead appends a CBOR head: the major type and its argument, in
// the fewest bytes (RFC 8949 section 3).
func appendHead(b []byte, major byte, n uint64) []byte {
	m := major << 5
	switch {
	case n < 24:
		return append(b, m|byte(n))
	case n <= math.MaxUint8:
		return append(b, m|24, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, m|25), uint16(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, m|26), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, m|27), n)
}

func headLen(n uint64) int {
	switch {
	case n < 24:
		return 1
	case n <= math.MaxUint8:
		return 2
	case n <= math.MaxUint16:
		return 3
	case n <= math.MaxUint32:
		return 5
	}
	return 9
}

func appendInt(b []byte, n int64) []byte {
	if n < 0 {
		return appendHead(b, 1, uint64(-1-n))
	}
	return appendHead(b, 0, uint64(n))
}

// A notification in CBOR: the JSON notification's four fields, in its
// order, around the publication's cached CBOR.
const (
	cborNotePrefix = protocol.CBORNotePrefix
	cborNoteSeq    = protocol.CBORNoteSeq
	cborNotePub    = protocol.CBORNotePublication
)

func appendNotificationCBOR(b []byte, sid string, seq int64, body []byte) []byte {
	b = append(b, cborNotePrefix...)
	b = appendHead(b, 3, uint64(len(sid)))
	b = append(b, sid...)
	b = append(b, cborNoteSeq...)
	b = appendInt(b, seq)
	b = append(b, cborNotePub...)
	return append(b, body...)
}

func notificationCBORSize(sid string, seq int64, body []byte) int {
	return len(cborNotePrefix) + headLen(uint64(len(sid))) + len(sid) + len(cborNoteSeq) +
		headLen(uint64(max(seq, -1-seq))) + len(cborNotePub) + len(body)
}

// requestDecoder reads CBOR requests strictly: no duplicate keys, tags or
// indefinite lengths, which the protocol does not use.
var requestDecoder = func() cbor.DecMode {
	m, err := cbor.DecOptions{
		DupMapKey:       cbor.DupMapKeyEnforcedAPF,
		IndefLength:     cbor.IndefLengthForbidden,
		TagsMd:          cbor.TagsForbidden,
		MaxNestedLevels: maxCBORDepth,
		DefaultMapType:  reflect.TypeOf(map[string]any(nil)),
	}.DecMode()
	if err != nil {
		panic(err) // constant options
	}
	return m
}()

// requestJSON turns a CBOR request into the JSON request it stands for.
// On an error it returns the request's id as JSON when it could read one.
func requestJSON(data []byte) ([]byte, json.RawMessage, *Error) {
	var v any
	if err := requestDecoder.Unmarshal(data, &v); err != nil {
		return nil, nil, errorf(CodeBadRequest, "malformed CBOR request: %v", err)
	}
	var id json.RawMessage
	if m, ok := v.(map[string]any); ok {
		if x, err := jsonValue(m["id"]); err == nil && x != nil {
			if b, err := json.Marshal(x); err == nil && validID(b) {
				id = b
			}
		}
	}
	x, err := jsonValue(v)
	if err != nil {
		return nil, id, errorf(CodeBadRequest, "malformed CBOR request: %v", err)
	}
	b, err := json.Marshal(x)
	if err != nil {
		return nil, id, errorf(CodeBadRequest, "malformed CBOR request: %v", err)
	}
	return b, id, nil
}

// jsonValue checks that a decoded CBOR value is one JSON can hold.
func jsonValue(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, string, uint64, int64:
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("number %v: JSON has no such number", x)
		}
		return x, nil
	case []any:
		for i, e := range x {
			var err error
			if x[i], err = jsonValue(e); err != nil {
				return nil, err
			}
		}
		return x, nil
	case map[string]any:
		for k, e := range x {
			var err error
			if x[k], err = jsonValue(e); err != nil {
				return nil, err
			}
		}
		return x, nil
	}
	return nil, fmt.Errorf("a %T: the protocol has only maps, arrays, text, numbers, booleans and null", v)
}
