package gateway

import (
	"encoding/json"
	"strconv"
)

// decodeFlat decodes the requests that make up nearly all of a busy
// broker's, a flat object of plain values (publish, subscribe,
// unsubscribe, resume: {"id":1,"op":"publish","uid":"u","cell":"1.2",
// "expires":"20s","desc":"…"}), the way encoding/json does, in a single
// pass and without reflection: encoding/json's Decoder cost 4% of the
// broker's CPU under a publication-heavy load. It reports false for
// anything else, and for anything it would decode differently or reject
// (an unknown, repeated-in-another-case or escaped key, a string with an
// escape, a control character or a byte above ASCII, null, an array or
// an object, a number that does not parse, a duration that does not, data
// after the object): decodeRequestStd decodes those, errors and all.
func decodeFlat(b []byte) (*Request, bool) {
	d := flatDecoder{b: b}
	req := &Request{}
	d.space()
	if !d.byte('{') {
		return nil, false
	}
	d.space()
	if d.byte('}') {
		return req, d.end()
	}
	for {
		d.space()
		key, ok := d.str()
		if !ok {
			return nil, false
		}
		d.space()
		if !d.byte(':') {
			return nil, false
		}
		d.space()
		if !d.field(req, key) {
			return nil, false
		}
		d.space()
		if d.byte('}') {
			return req, d.end()
		}
		if !d.byte(',') {
			return nil, false
		}
	}
}

type flatDecoder struct {
	b []byte
	i int
}

func (d *flatDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// byte consumes c if it comes next.
func (d *flatDecoder) byte(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// end reports whether nothing but white space follows.
func (d *flatDecoder) end() bool {
	d.space()
	return d.i == len(d.b)
}

// str consumes a string of printable ASCII without escapes and returns
// its contents.
func (d *flatDecoder) str() ([]byte, bool) {
	if !d.byte('"') {
		return nil, false
	}
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return d.b[start : d.i-1], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
		d.i++
	}
	return nil, false
}

// number consumes a JSON number and returns its text.
func (d *flatDecoder) number() ([]byte, bool) {
	start := d.i
	d.byte('-')
	switch {
	case d.byte('0'):
	case d.digits() == 0:
		return nil, false
	}
	if d.byte('.') && d.digits() == 0 {
		return nil, false
	}
	if d.byte('e') || d.byte('E') {
		if !d.byte('+') {
			d.byte('-')
		}
		if d.digits() == 0 {
			return nil, false
		}
	}
	return d.b[start:d.i], true
}

func (d *flatDecoder) digits() int {
	n := 0
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
		n++
	}
	return n
}

// field decodes the value of key into req.
func (d *flatDecoder) field(req *Request, key []byte) bool {
	var str *string
	var f **float64
	var dur **Duration
	switch string(key) {
	case "id":
		raw, ok := d.scalar()
		if !ok {
			return false
		}
		req.ID = append(json.RawMessage(nil), raw...)
		return true
	case "self_join":
		switch {
		case d.lit("true"):
			req.SelfJoin = true
		case d.lit("false"):
			req.SelfJoin = false
		default:
			return false
		}
		return true
	case "op":
		str = &req.Op
	case "uid":
		str = &req.UID
	case "token":
		str = &req.Token
	case "desc":
		str = &req.Desc
	case "sid":
		str = &req.Sid
	case "attr":
		str = &req.Attr
	case "paging":
		str = &req.Paging
	case "cursor":
		str = &req.Cursor
	case "cell":
		req.Cell = new(string)
		str = req.Cell
	case "topic":
		req.Topic = new(string)
		str = req.Topic
	case "lat":
		f = &req.Lat
	case "lng":
		f = &req.Lng
	case "radius_m":
		f = &req.RadiusM
	case "past":
		dur = &req.Past
	case "future":
		dur = &req.Future
	case "expires":
		dur = &req.Expires
	default:
		return false
	}
	switch {
	case str != nil:
		v, ok := d.str()
		*str = string(v)
		return ok
	case f != nil:
		v, ok := d.number()
		if !ok {
			return false
		}
		x, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return false
		}
		*f = &x
		return true
	default:
		raw, ok := d.scalar()
		if !ok {
			return false
		}
		v := new(Duration)
		if v.UnmarshalJSON(raw) != nil {
			return false
		}
		*dur = v
		return true
	}
}

// scalar consumes a string or a number and returns it as written,
// quotes included.
func (d *flatDecoder) scalar() ([]byte, bool) {
	start := d.i
	var ok bool
	if d.i < len(d.b) && d.b[d.i] == '"' {
		_, ok = d.str()
	} else {
		_, ok = d.number()
	}
	return d.b[start:d.i], ok
}

// lit consumes the literal s.
func (d *flatDecoder) lit(s string) bool {
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}
