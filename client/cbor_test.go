package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
)

// brokerPub is a publication as the broker renders it (gateway's
// pubJSON): the oracle's encoder for both encodings, written apart from
// the decoders under test.
type brokerPub struct {
	Pid       string            `json:"pid"`
	Uid       string            `json:"uid"`
	Cell      string            `json:"cell"`
	Topic     string            `json:"topic,omitempty"`
	Tp        string            `json:"tp"`
	ExpiresAt string            `json:"expires_at"`
	Desc      string            `json:"desc,omitempty"`
	Attrs     map[string]string `json:"attrs,omitempty"`
	Lat       *float64          `json:"lat,omitempty"`
	Lng       *float64          `json:"lng,omitempty"`
	RadiusM   *float64          `json:"radius_m,omitempty"`
	Polygon   *brokerPolygon    `json:"polygon,omitempty"`
}

// brokerPolygon is a GeoJSON geometry as the broker renders it: numbers
// in strconv's shortest 'g' form in JSON (geo's AppendGeoJSON), and in
// CBOR its JSON's value, so whole numbers as integers.
type brokerPolygon struct {
	multi bool
	polys [][][][2]float64 // [lng, lat] positions, rings closed
}

func (g *brokerPolygon) MarshalJSON() ([]byte, error) {
	var b []byte
	b = fmt.Appendf(b, `{"type":%q,"coordinates":`, g.typ())
	if g.multi {
		b = append(b, '[')
	}
	for i, rings := range g.polys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		for j, ring := range rings {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			for k, pos := range ring {
				if k > 0 {
					b = append(b, ',')
				}
				b = append(b, '[')
				b = strconv.AppendFloat(b, pos[0], 'g', -1, 64)
				b = append(b, ',')
				b = strconv.AppendFloat(b, pos[1], 'g', -1, 64)
				b = append(b, ']')
			}
			b = append(b, ']')
		}
		b = append(b, ']')
	}
	if g.multi {
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

func (g *brokerPolygon) MarshalCBOR() ([]byte, error) {
	num := func(f float64) any {
		if f == math.Trunc(f) {
			return int64(f)
		}
		return f
	}
	polys := make([]any, len(g.polys))
	for i, rings := range g.polys {
		rs := make([]any, len(rings))
		for j, ring := range rings {
			ps := make([]any, len(ring))
			for k, pos := range ring {
				ps[k] = []any{num(pos[0]), num(pos[1])}
			}
			rs[j] = ps
		}
		polys[i] = rs
	}
	var coords any = polys
	if !g.multi {
		coords = polys[0]
	}
	// A struct, not a map: its fields keep their order, as the broker's.
	return cbor.Marshal(struct {
		Type        string `cbor:"type"`
		Coordinates any    `cbor:"coordinates"`
	}{g.typ(), coords})
}

func (g *brokerPolygon) typ() string {
	if g.multi {
		return "MultiPolygon"
	}
	return "Polygon"
}

// randomPolygon draws rings of whole, decimal and tiny coordinates (the
// forms strconv's 'g' writes differently) and sometimes more polygons.
func randomPolygon(r *rand.Rand) *brokerPolygon {
	coord := func(limit float64) float64 {
		switch r.IntN(4) {
		case 0:
			return float64(r.IntN(int(2*limit)) - int(limit)) // never -0: the broker's JSON writes "-0", its CBOR 0
		case 1:
			return 1e-5 * float64(1+r.IntN(9)) // "1e-05"
		}
		return (r.Float64()*2 - 1) * limit
	}
	g := &brokerPolygon{multi: r.IntN(3) == 0}
	for range 1 + r.IntN(2) {
		var rings [][][2]float64
		for range 1 + r.IntN(2) {
			ring := make([][2]float64, 3+r.IntN(5))
			for k := range ring {
				ring[k] = [2]float64{coord(180), coord(90)}
			}
			rings = append(rings, append(ring, ring[0]))
		}
		g.polys = append(g.polys, rings)
	}
	if !g.multi {
		g.polys = g.polys[:1]
	}
	return g
}

type brokerNote struct {
	Op          string    `json:"op"`
	Sid         string    `json:"sid"`
	Seq         int64     `json:"seq"`
	Publication brokerPub `json:"publication"`
}

func randomPub(r *rand.Rand) brokerPub {
	words := []string{"road", "closed", `"quoted"`, `back\slash`, "é", "世界", "😀", "<&>", "tab\t", ""}
	word := func() string { return words[r.IntN(len(words))] }
	tp := time.Unix(1_700_000_000+r.Int64N(1e8), r.Int64N(1e9)).UTC()
	p := brokerPub{Pid: fmt.Sprintf("p%d-1.4", r.IntN(1e6)), Uid: "u" + word(), Cell: "1.4.2", Tp: tp.Format(time.RFC3339Nano),
		ExpiresAt: tp.Add(time.Duration(r.IntN(100)) * time.Second).Format(time.RFC3339Nano)}
	if r.IntN(2) == 0 {
		p.Desc = strings.Repeat(word()+" ", r.IntN(40))
	}
	if r.IntN(3) == 0 {
		p.Topic = "sports/" + word()
	}
	if r.IntN(2) == 0 {
		p.Attrs = map[string]string{}
		for range r.IntN(5) {
			p.Attrs["k"+word()] = word()
		}
	}
	switch r.IntN(3) {
	case 0:
		lat, lng := 40+r.Float64()*5, -79+float64(r.IntN(8)) // integers too: JSON has no float type
		p.Lat, p.Lng = &lat, &lng
		if r.IntN(2) == 0 {
			rad := float64(r.IntN(5000))
			p.RadiusM = &rad
		}
	case 1:
		p.Polygon = randomPolygon(r)
	}
	return p
}

// TestCBORMatchesJSON: the same notifications, rendered in JSON and in
// CBOR, decode to the same values, and CBOR's fast path takes them.
func TestCBORMatchesJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		note := brokerNote{Op: "notification", Sid: "dn0tjgthw7yv-1.4.2", Seq: r.Int64N(1 << uint(r.IntN(62)+1)), Publication: randomPub(r)}
		jb, err := json.Marshal(note)
		if err != nil {
			t.Fatal(err)
		}
		cb, err := cbor.Marshal(note)
		if err != nil {
			t.Fatal(err)
		}
		jsid, jseq, _, jpub, err := splitNotification(jb)
		if err != nil {
			t.Fatal(err)
		}
		csid, cseq, cpub, ok := splitNotificationCBOR(cb)
		if !ok || string(csid) != string(jsid) || cseq != jseq {
			t.Fatalf("%d: CBOR split %q %d %v, JSON %q %d", i, csid, cseq, ok, jsid, jseq)
		}
		var fromJSON, fromCBOR, slow Publication
		if err := decodePublication(jpub, &fromJSON, nil); err != nil {
			t.Fatal(err)
		}
		rd := cborReader{b: cpub}
		if !rd.publication(&fromCBOR) || rd.i != len(cpub) {
			t.Fatalf("%d: the fast path refused %x", i, cpub)
		}
		if err := decodePublicationCBORSlow(cpub, &slow); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fromJSON, fromCBOR) || !reflect.DeepEqual(fromCBOR, slow) {
			t.Fatalf("%d:\nJSON %+v\nCBOR %+v\nslow %+v", i, fromJSON, fromCBOR, slow)
		}
		// Equal is not enough: both could drop the polygon alike.
		var want []byte
		if note.Publication.Polygon != nil {
			want, _ = note.Publication.Polygon.MarshalJSON()
		}
		if string(fromCBOR.Polygon) != string(want) {
			t.Fatalf("%d: polygon %s, sent %s", i, fromCBOR.Polygon, want)
		}
	}
}

// TestCBORGeoJSONForms: a polygon in CBOR forms the broker does not write
// (half and single floats, negative integers, escapes, nested values)
// reads as the same JSON on both paths, and values JSON cannot hold are
// refused by both.
func TestCBORGeoJSONForms(t *testing.T) {
	pub := func(polygon []byte) []byte {
		// {"pid":"p","polygon":<polygon>}
		return append([]byte("\xa2\x63pid\x61p\x67polygon"), polygon...)
	}
	for _, c := range []struct {
		cbor, json string
	}{
		{"\xf9\x3e\x00", "1.5"},                                           // half
		{"\xf9\x00\x01", "5.960464477539063e-08"},                         // half, subnormal
		{"\xfa\xc0\x20\x00\x00", "-2.5"},                                  // single
		{"\x38\x63", "-100"},                                              // negative integer
		{"\x3b\xff\xff\xff\xff\xff\xff\xff\xff", "-18446744073709551616"}, // below int64
		{"\x1b\xff\xff\xff\xff\xff\xff\xff\xff", "18446744073709551615"},
		{"\x82\xf5\xf6", "[true,null]"},
		{"\xa1\x61k\x64a\"\\\n", `{"k":"a\"\\\u000a"}`},
		{"\xa2\x64type\x67Polygon\x6bcoordinates\x81\x81\x82\x01\xfb\x40\x04\x00\x00\x00\x00\x00\x00",
			`{"type":"Polygon","coordinates":[[[1,2.5]]]}`},
	} {
		b := pub([]byte(c.cbor))
		var fast, slow Publication
		rd := cborReader{b: b}
		if !rd.publication(&fast) || rd.i != len(b) {
			t.Errorf("%x: fast path refused", c.cbor)
		}
		if err := decodePublicationCBORSlow(b, &slow); err != nil {
			t.Errorf("%x: %v", c.cbor, err)
		}
		if string(fast.Polygon) != c.json || string(slow.Polygon) != c.json || !json.Valid(fast.Polygon) {
			t.Errorf("%x: fast %s, fxamacker %s, want %s", c.cbor, fast.Polygon, slow.Polygon, c.json)
		}
	}
	deep := strings.Repeat("\x81", geoJSONDepth+1) + "\x01"
	for _, bad := range []string{"\x41\x00", "\xc1\x01", "\xfb\x7f\xf8\x00\x00\x00\x00\x00\x01", "\xf9\x7c\x00", "\x9f\x01\xff", "\x61\xff", "\xa1\x01\x01", "\xf7", deep, "\x82\x01"} {
		var p Publication
		if err := decodePublicationCBOR(pub([]byte(bad)), &p, nil); !errors.Is(err, ErrProtocol) {
			t.Errorf("%x: %v, %s; want ErrProtocol", bad, err, p.Polygon)
		}
	}
	// Null is no polygon, on both paths.
	var p Publication
	if err := decodePublicationCBOR(pub([]byte{0xf6}), &p, nil); err != nil || p.Polygon != nil {
		t.Errorf("null: %v, %q", err, p.Polygon)
	}
	if err := decodePublicationCBORSlow(pub([]byte{0xf6}), &p); err != nil || p.Polygon != nil {
		t.Errorf("null, fxamacker: %v, %q", err, p.Polygon)
	}
}

// TestCBORIntegerPlace: the broker sends a whole-degree coordinate as
// an integer, as its JSON does; it reads as the same float.
func TestCBORIntegerPlace(t *testing.T) {
	b, err := cbor.Marshal(struct {
		Lat int `json:"lat"`
		Lng int `json:"lng"`
		Rad int `json:"radius_m"`
	}{41, -75, 300})
	if err != nil {
		t.Fatal(err)
	}
	var fast, slow Publication
	rd := cborReader{b: b}
	if !rd.publication(&fast) || decodePublicationCBORSlow(b, &slow) != nil {
		t.Fatalf("%x refused", b)
	}
	want := &Place{Lat: 41, Lng: -75, RadiusM: 300}
	if !reflect.DeepEqual(fast.At, want) || !reflect.DeepEqual(slow.At, want) {
		t.Fatalf("fast %+v, fxamacker %+v", fast.At, slow.At)
	}
}

// FuzzPublicationCBOR: whatever the hand decoder accepts, fxamacker/cbor
// reads the same.
func FuzzPublicationCBOR(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 8 {
		b, _ := cbor.Marshal(randomPub(r))
		f.Add(b)
	}
	f.Add([]byte{0xa0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast, slow Publication
		rd := cborReader{b: b}
		if !rd.publication(&fast) || rd.i != len(b) {
			return
		}
		if err := decodePublicationCBORSlow(b, &slow); err != nil {
			t.Fatalf("fast accepted what fxamacker/cbor refuses: %v", err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("fast %+v, fxamacker %+v", fast, slow)
		}
	})
}

// FuzzNotificationCBOR: the splitter never panics, and what it takes
// fxamacker/cbor reads as the same notification.
func FuzzNotificationCBOR(f *testing.F) {
	b, _ := cbor.Marshal(brokerNote{Op: "notification", Sid: "s-1", Seq: 12, Publication: brokerPub{Pid: "p"}})
	f.Add(b)
	f.Add(append(append([]byte(nil), cborNotePrefix...), 0x60, 0x63, 's', 'e', 'q', 0x01))
	f.Fuzz(func(t *testing.T, b []byte) {
		sid, seq, pub, ok := splitNotificationCBOR(b)
		if !ok {
			decodeFrameCBOR(b) // must not panic either
			return
		}
		fr, err := decodeFrameCBOR(b)
		if err != nil {
			return // the publication itself may be bad: the fast path reads it later
		}
		if len(sid) == 0 || fr.Op != "notification" || fr.Sid != string(sid) || fr.Seq != seq || string(fr.Publication) != string(pub) {
			t.Fatalf("%x: split %q %d %x, fxamacker %+v", b, sid, seq, pub, fr)
		}
	})
}

// BenchmarkDecodeNotificationCBOR: BenchmarkDecodeNotification's frame
// in CBOR.
func BenchmarkDecodeNotificationCBOR(b *testing.B) {
	note := brokerNote{Op: "notification", Sid: "dn0tjgthw7yv-1.4.2", Seq: 12345, Publication: brokerPub{Pid: "dn0tjh1k2x3q-1.4.2.1.3", Uid: "reporter",
		Cell: "1.4.2.1.3", Tp: "2026-11-21T10:32:12.123456789Z", ExpiresAt: "2026-11-21T10:33:12.123456789Z", Desc: "road closed at the corner"}}
	frame, err := cbor.Marshal(note)
	if err != nil {
		b.Fatal(err)
	}
	var stamps stampCache // as the client's reader has
	b.ReportAllocs()
	for b.Loop() {
		_, _, pub, ok := splitNotificationCBOR(frame)
		var n Notification
		if !ok || decodePublicationCBOR(pub, &n.Publication, &stamps) != nil {
			b.Fatal("refused")
		}
	}
}
