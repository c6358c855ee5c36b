package gateway

import (
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

// TestDecodeFlatIsEncodingJSON: every request decodeFlat takes, it
// decodes as encoding/json does (decodeRequestStd: the same Request, no
// error), over random requests built from the protocol's keys and from
// values of every kind, well and badly formed; and it takes the usual
// publish and subscribe requests.
func TestDecodeFlatIsEncodingJSON(t *testing.T) {
	keys := []string{"id", "op", "uid", "token", "cell", "lat", "lng", "radius_m", "topic", "past", "future", "expires",
		"self_join", "desc", "sid", "attr", "paging", "cursor", "cover", "after", "k", "eq", "attrs", "polygon", "near",
		"Op", "UID", "bogus", "op\\u0020", ""}
	values := []string{`"publish"`, `"subscribe"`, `"u1"`, `"1.2.3"`, `"10s"`, `"1m30s"`, `"-5s"`, `"abc"`, `""`, `"é"`,
		`"a\"b"`, `"\u0041"`, "\"tab\there\"", `"push"`, `"cursor"`, `"x`, `12`, `0`, `-0`, `1.5`, `-2.25e3`, `1e400`, `01`,
		`-`, `1.`, `.5`, `1e`, `3E+2`, `true`, `false`, `null`, `tru`, `[]`, `{}`, `{"a":1}`, `[1,2]`, `"20s"`, `20`,
		`9999999999999999999999`, `"1h"`, `1e-7`}
	spaces := []string{"", " ", "\n", "\t ", "\r\n"}
	rng := rand.New(rand.NewSource(1))
	pick := func(xs []string) string { return xs[rng.Intn(len(xs))] }
	taken := 0
	for range 200000 {
		var b strings.Builder
		b.WriteString(pick(spaces))
		b.WriteString("{")
		n := rng.Intn(7)
		for i := range n {
			if i > 0 {
				b.WriteString(pick(spaces) + ",")
			}
			b.WriteString(pick(spaces) + `"` + pick(keys) + `"` + pick(spaces) + ":" + pick(spaces) + pick(values))
		}
		b.WriteString(pick(spaces) + "}" + pick(spaces))
		if rng.Intn(20) == 0 {
			b.WriteString(pick([]string{"x", "{}", ",", "1"}))
		}
		if rng.Intn(30) == 0 { // a cut request
			s := b.String()
			b.Reset()
			b.WriteString(s[:rng.Intn(len(s)+1)])
		}
		data := []byte(b.String())
		got, ok := decodeFlat(data)
		if !ok {
			continue
		}
		taken++
		want, e := decodeRequestStd(data)
		if e != nil {
			t.Fatalf("%s: decodeFlat took it, encoding/json says %v", data, e)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n flat %+v\n json %+v", data, got, want)
		}
	}
	if taken < 1000 {
		t.Fatalf("decodeFlat took only %d random requests", taken)
	}
	for _, s := range []string{
		`{"id":1,"op":"publish","uid":"u1","cell":"1.2.3","expires":"20s","desc":"accident #x.12"}`,
		`{"id":"a7","op":"subscribe","uid":"u1","cell":"1.2.3","past":"10s","future":"10s","self_join":true}`,
		`{"id":2,"op":"subscribe","uid":"u","lat":40.7,"lng":-74,"radius_m":500,"past":10,"future":1.5}`,
	} {
		if _, ok := decodeFlat([]byte(s)); !ok {
			t.Errorf("decodeFlat left %s to encoding/json", s)
		}
	}
}

// BenchmarkDecodeRequest decodes a publish request, as decodeRequest
// does and as encoding/json alone did.
//
//	go test ./gateway -run '^$' -bench DecodeRequest
func BenchmarkDecodeRequest(b *testing.B) {
	data := []byte(`{"id":1234,"op":"publish","uid":"user-4711","cell":"s2:89c25.1.2.3","expires":"20s","desc":"fallen tree #l0x9k2.48213"}`)
	b.Run("flat", func(b *testing.B) {
		for range b.N {
			if _, e := decodeRequest(data); e != nil {
				b.Fatal(e)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for range b.N {
			if _, e := decodeRequestStd(data); e != nil {
				b.Fatal(e)
			}
		}
	})
}
