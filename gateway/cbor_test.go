package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"
)

// plainValue decodes JSON into the values the oracle compares: numbers as
// int64 when they are integers that fit, float64 otherwise.
func plainJSON(t testing.TB, b []byte) any {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("oracle cannot read %q: %v", b, err)
	}
	return normalize(v)
}

func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		if !strings.ContainsAny(string(x), ".eE+") {
			if n, err := x.Int64(); err == nil {
				return n
			}
		}
		f, _ := x.Float64()
		return f
	case uint64:
		if x > math.MaxInt64 {
			return float64(x) // cannot come from appendCBOR
		}
		return int64(x)
	case []any:
		for i := range x {
			x[i] = normalize(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = normalize(x[k])
		}
	case map[any]any:
		m := map[string]any{}
		for k, e := range x {
			m[fmt.Sprint(k)] = normalize(e)
		}
		return m
	}
	return v
}

// cborValue decodes CBOR with fxamacker/cbor, strictly: no indefinite
// lengths, shortest form.
func cborValue(t testing.TB, b []byte) any {
	dm, _ := cbor.DecOptions{IndefLength: cbor.IndefLengthForbidden, DefaultMapType: reflect.TypeOf(map[string]any(nil))}.DecMode()
	var v any
	if err := dm.Unmarshal(b, &v); err != nil {
		t.Fatalf("cbor cannot read %x: %v", b, err)
	}
	return normalize(v)
}

func checkTranscode(t testing.TB, src []byte) {
	got, err := appendCBOR(nil, src)
	if err != nil {
		t.Fatalf("%q: %v", src, err)
	}
	if want, have := plainJSON(t, src), cborValue(t, got); !reflect.DeepEqual(want, have) {
		t.Fatalf("%q: JSON %#v, CBOR %#v", src, want, have)
	}
}

// randomJSON draws a JSON value like the broker's replies: nested
// objects and arrays, strings with escapes and non-ASCII, integers of
// every head size, floats.
func randomJSON(r *rand.Rand, depth int) any {
	k := r.IntN(8)
	if depth > 3 {
		k = r.IntN(5)
	}
	switch k {
	case 0:
		return []string{"", "a", "notification", "q\"uo\\te", "<&>", "x\u00e9\u4e16\U0001F600", "\n\t"}[r.IntN(7)] + strings.Repeat("s", r.IntN(300))
	case 1:
		return r.Int64N(1<<uint(r.IntN(62)+1)) - r.Int64N(1<<uint(r.IntN(62)+1))
	case 2:
		return r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20))
	case 3:
		return r.IntN(2) == 0
	case 4:
		return nil
	case 5, 6:
		m := map[string]any{}
		for range r.IntN(30>>depth + 1) {
			m[fmt.Sprint("k", r.IntN(100))] = randomJSON(r, depth+1)
		}
		return m
	}
	a := make([]any, r.IntN(300>>(3*depth)+1))
	for i := range a {
		a[i] = randomJSON(r, depth+1)
	}
	return a
}

// TestTranscode: appendCBOR carries every value the broker may send,
// against encoding/json and fxamacker/cbor as the oracle.
func TestTranscode(t *testing.T) {
	for _, s := range []string{`{}`, `[]`, `0`, `-1`, `-9223372036854775808`, `18446744073709551616`, `1e300`, `2.5`, ` { "a" : [ 1 , true , null ] } `, `"\u00e9\ud83d\ude00"`} {
		checkTranscode(t, []byte(s))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		b, err := json.Marshal(randomJSON(r, 0))
		if err != nil {
			t.Fatal(err)
		}
		checkTranscode(t, b)
	}
	for _, s := range []string{``, `1e400`, `{`, `[1,]`, `{"a"}`, `{1:2}`, `"\x01"`, "\"\xff\"", `tru`, `1 2`, `"\q"`, `-`, `{"a":1,}`} {
		if b, err := appendCBOR(nil, []byte(s)); err == nil {
			t.Errorf("%q transcoded to %x", s, b)
		}
	}
}

// FuzzTranscode: appendCBOR never panics, and on valid JSON agrees with
// the oracle.
func FuzzTranscode(f *testing.F) {
	f.Add([]byte(`{"op":"notification","sid":"s-1","seq":12,"publication":{"pid":"p","lat":40.5}}`))
	f.Add([]byte(`[1,-2,3.5e3,"\u00e9",{"a":[]}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := appendCBOR(nil, b)
		var v any
		if json.Unmarshal(b, &v) != nil || !utf8.Valid(b) {
			return // not JSON, a number out of float64's range, or bytes that are not text
		}
		if err != nil {
			if bytes.Count(b, []byte("["))+bytes.Count(b, []byte("{")) >= maxCBORDepth {
				return // deeper than the protocol goes
			}
			t.Fatalf("valid JSON %q refused: %v", b, err)
		}
		if want, have := plainJSON(t, b), cborValue(t, out); !reflect.DeepEqual(want, have) {
			t.Fatalf("%q: JSON %#v, CBOR %#v", b, want, have)
		}
	})
}

// TestNotificationCBOR: the notification rendered straight into CBOR is
// byte for byte the transcoded JSON notification, and its size is right.
func TestNotificationCBOR(t *testing.T) {
	body := []byte(`{"pid":"dn0tjh1k2x3q-1.4.2.1.3","uid":"reporter","cell":"1.4.2.1.3","tp":"2026-11-21T10:32:12.123456789Z","expires_at":"2026-11-21T10:33:12.123456789Z","desc":"road closed","attrs":{"a":"b"},"lat":40.5,"lng":-73}`)
	cb, err := appendCBOR(nil, body)
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range []int64{1, 23, 24, 255, 256, 65535, 65536, 1 << 32, math.MaxInt64} {
		for _, sid := range []string{"s", "dn0tjgthw7yv-1.4.2", strings.Repeat("x", 300)} {
			want, err := appendCBOR(nil, appendNotification(nil, sid, seq, body))
			if err != nil {
				t.Fatal(err)
			}
			got := appendNotificationCBOR(nil, sid, seq, cb)
			if !bytes.Equal(got, want) {
				t.Fatalf("seq %d sid %q:\n got %x\nwant %x", seq, sid, got, want)
			}
			f := frame{data: cb, sid: sid, seq: seq, tp: 1, bin: true}
			if f.size() != len(got) {
				t.Fatalf("seq %d: size %d, frame %d", seq, f.size(), len(got))
			}
		}
	}
}

// TestRequestJSON: a CBOR request becomes the JSON request of the same
// value; what JSON cannot carry is refused with its id kept.
func TestRequestJSON(t *testing.T) {
	enc := func(v any) []byte {
		b, err := cbor.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	b, id, e := requestJSON(enc(map[string]any{"id": "7", "op": "subscribe", "lat": 40.5, "past": 10, "attrs": map[string]string{"a": "é"}}))
	if e != nil || string(id) != `"7"` {
		t.Fatalf("refused: %v, id %q", e, id)
	}
	req, e := decodeRequest(b)
	if e != nil || string(req.ID) != `"7"` || req.Op != "subscribe" || *req.Lat != 40.5 || req.Past.get() != 10e9 || req.Attrs["a"] != "é" {
		t.Fatalf("decoded %s as %+v, %v", b, req, e)
	}
	for name, data := range map[string][]byte{
		"bytes":  enc(map[string]any{"id": 3, "op": []byte("x")}),
		"nan":    enc(map[string]any{"id": 3, "op": math.NaN()}),
		"tag":    enc(map[string]any{"id": 3, "op": cbor.Tag{Number: 1, Content: 5}}),
		"intkey": enc(map[any]any{"id": 3, 1: "x"}),
		"dupkey": {0xa2, 0x62, 'i', 'd', 0x03, 0x62, 'i', 'd', 0x04},
		"indef":  {0xbf, 0x62, 'i', 'd', 0x03, 0xff},
		"trail":  append(enc(map[string]any{"id": 3}), 0),
		"simple": enc(map[string]any{"id": 3, "op": cbor.SimpleValue(99)}),
	} {
		_, id, e := requestJSON(data)
		if e == nil || e.Code != CodeBadRequest {
			t.Errorf("%s: accepted", name)
		}
		if name == "bytes" || name == "nan" || name == "simple" {
			if string(id) != "3" {
				t.Errorf("%s: id %q lost", name, id)
			}
		}
	}
}

// FuzzRequestJSON: any bytes give a request or a bad_request, and what
// passes is JSON.
func FuzzRequestJSON(f *testing.F) {
	f.Add([]byte{0xa2, 0x62, 'i', 'd', 0x03, 0x62, 'o', 'p', 0x61, 'x'})
	f.Add([]byte{0xa1, 0x62, 'i', 'd', 0xfb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		out, _, e := requestJSON(b)
		if e == nil && !json.Valid(out) {
			t.Fatalf("%x became %q", b, out)
		}
	})
}
