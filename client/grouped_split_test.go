package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

type wireRecipient struct {
	Sid string `json:"sid" cbor:"sid"`
	Seq int64  `json:"seq" cbor:"seq"`
}

// A grouped frame as the broker renders it (the fast path), and the same
// value rendered otherwise (encoding/json's path), read back as the
// recipients and the publication written; a frame that is not one is an
// ErrProtocol. In CBOR, the broker's shape as fxamacker/cbor writes it.
func TestSplitGroup(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pub := `{"pid":"a-1.2","uid":"u","cell":"1.2","tp":"2026-11-21T10:32:12.1Z","desc":"x"}`
	for range 200 {
		var want []recipient
		var to []wireRecipient
		var b strings.Builder
		b.WriteString(`{"op":"notifications","to":[`)
		for i := range 1 + rng.IntN(50) {
			r := wireRecipient{Sid: fmt.Sprintf("s%d-1.%d", rng.Int64N(1<<40), i), Seq: rng.Int64()}
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"sid":"%s","seq":%d}`, r.Sid, r.Seq)
			to = append(to, r)
			want = append(want, recipient{sid: []byte(r.Sid), seq: r.Seq})
		}
		b.WriteString(`],"publication":` + pub + `}`)
		other, _ := json.MarshalIndent(map[string]any{"publication": json.RawMessage(pub), "to": to, "op": "notifications"}, "", " ")
		for _, frame := range [][]byte{[]byte(b.String()), other} {
			if !isGroup(frame) || isNotification(frame) {
				t.Fatalf("not taken for a grouped frame: %.80s", frame)
			}
			got, p, err := splitGroup(frame, nil)
			if err != nil || !reflect.DeepEqual(got, want) || !jsonEqual(p, []byte(pub)) {
				t.Fatalf("%.80s: %v %v %s", frame, err, got, p)
			}
		}
		cb, err := cbor.Marshal(struct {
			Op          string          `cbor:"op"`
			To          []wireRecipient `cbor:"to"`
			Publication cbor.RawMessage `cbor:"publication"`
		}{"notifications", to, cbor.RawMessage{0xa1, 0x61, 'k', 0x61, 'v'}})
		if err != nil {
			t.Fatal(err)
		}
		got, p, ok := splitGroupCBOR(cb, nil)
		if !ok || !reflect.DeepEqual(got, want) || string(p) != "\xa1\x61k\x61v" {
			t.Fatalf("CBOR %x: %v %v %x", cb, ok, got, p)
		}
		if _, _, ok := splitGroupCBOR(cb[:len(cb)-7], nil); ok {
			t.Fatalf("CBOR cut in its last recipient or key: split")
		}
	}
	for _, bad := range []string{
		`{"op":"notifications","to":[],"publication":{}}`,
		`{"op":"notifications","to":[{"seq":1}],"publication":{}}`,
		`{"op":"notifications","to":[{"sid":"a","seq":1}]}`,
	} {
		if _, _, err := splitGroup([]byte(bad), nil); !errors.Is(err, ErrProtocol) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// FuzzGroup: whatever the grouped splitter accepts, encoding/json reads
// as the same recipients, each with a sid.
func FuzzGroup(f *testing.F) {
	f.Add([]byte(`{"op":"notifications","to":[{"sid":"a","seq":1},{"sid":"b","seq":2}],"publication":{"pid":"p"}}`))
	f.Add([]byte(`{"op":"notifications","to":[{"sid":"a","seq":1}],"publication":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		to, pub, err := splitGroup(b, nil)
		if err != nil {
			return
		}
		var w struct {
			To []wireRecipient `json:"to"`
		}
		if err := json.Unmarshal(b, &w); err != nil {
			if bytes.HasPrefix(b, groupPrefix) {
				return // the fast path reads the recipients; the publication's decoder checks the rest
			}
			t.Fatalf("%q: split, but encoding/json refuses it: %v", b, err)
		}
		if len(w.To) != len(to) || len(pub) == 0 {
			t.Fatalf("%q: split %d recipients, encoding/json %d", b, len(to), len(w.To))
		}
		for i, r := range to {
			if len(r.sid) == 0 || string(r.sid) != w.To[i].Sid || r.seq != w.To[i].Seq {
				t.Fatalf("%q: recipient %d: %q %d, encoding/json %+v", b, i, r.sid, r.seq, w.To[i])
			}
		}
	})
}

// FuzzGroupCBOR: whatever the CBOR splitter accepts, fxamacker/cbor reads
// as the same recipients.
func FuzzGroupCBOR(f *testing.F) {
	b, _ := cbor.Marshal(struct {
		Op          string          `cbor:"op"`
		To          []wireRecipient `cbor:"to"`
		Publication cbor.RawMessage `cbor:"publication"`
	}{"notifications", []wireRecipient{{"a", 1}, {"b", 2}}, cbor.RawMessage{0xa0}})
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		to, pub, ok := splitGroupCBOR(b, nil)
		if !ok {
			return
		}
		var w struct {
			To          []wireRecipient `cbor:"to"`
			Publication cbor.RawMessage `cbor:"publication"`
		}
		if err := cbor.Unmarshal(b, &w); err != nil {
			return // the publication may be bad: its decoder refuses it later
		}
		if len(w.To) != len(to) || string(w.Publication) != string(pub) {
			t.Fatalf("%x: split %d recipients, fxamacker %d", b, len(to), len(w.To))
		}
		for i, r := range to {
			if len(r.sid) == 0 || string(r.sid) != w.To[i].Sid || r.seq != w.To[i].Seq {
				t.Fatalf("%x: recipient %d: %q %d, fxamacker %+v", b, i, r.sid, r.seq, w.To[i])
			}
		}
	})
}
