package client

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
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
	if r.IntN(2) == 0 {
		lat, lng := 40+r.Float64()*5, -79+float64(r.IntN(8)) // integers too: JSON has no float type
		p.Lat, p.Lng = &lat, &lng
		if r.IntN(2) == 0 {
			rad := float64(r.IntN(5000))
			p.RadiusM = &rad
		}
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
