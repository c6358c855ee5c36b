package gateway

import (
	"encoding/json"
	"math/rand"
	"testing"
)

// TestAppendPubJSONIsMarshal: a publication without a shape renders byte
// for byte as json.Marshal renders it, over random strings of every
// troublesome kind (quotes, backslashes, control characters, HTML's
// <>&, invalid UTF-8, U+2028, multibyte runes) and random attributes; one
// with a shape is left to json.Marshal.
func TestAppendPubJSONIsMarshal(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	parts := []string{"a", "Z", "0", " ", "\"", "\\", "/", "<", ">", "&", "\b", "\f", "\n", "\r", "\t", "\x00", "\x1f", "\x7f",
		"é", "€", "𝄞", "\u2028", "\u2029", "\xff", "\xc3", "\xe2\x82", "\ufffd", "'", "}"}
	str := func() string {
		s := ""
		for range rng.Intn(8) {
			s += parts[rng.Intn(len(parts))]
		}
		return s
	}
	for range 50000 {
		j := pubJSON{Pid: str(), Uid: str(), Cell: str(), Tp: str(), ExpiresAt: str()}
		if rng.Intn(2) == 0 {
			j.Topic = str()
		}
		if rng.Intn(2) == 0 {
			j.Desc = str()
		}
		if rng.Intn(3) == 0 {
			j.Attrs = map[string]string{}
			for range rng.Intn(4) {
				j.Attrs[str()] = str()
			}
		}
		want, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendPubJSON(nil, &j)
		if !ok || string(got) != string(want) {
			t.Fatalf("%+v:\n got  %q\n want %q", j, got, want)
		}
	}
	x := 1.5
	if b, ok := appendPubJSON([]byte("x"), &pubJSON{Lat: &x, Lng: &x}); ok || string(b) != "x" {
		t.Fatalf("a shaped publication: %q, %v", b, ok)
	}
}

// BenchmarkRenderPublication renders a cell's publication as the cache
// does on a miss, and with json.Marshal as it did.
//
//	go test ./gateway -run '^$' -bench RenderPublication
func BenchmarkRenderPublication(b *testing.B) {
	j := pubJSON{Pid: "m3k2x9a1b-4f", Uid: "user-4711", Cell: "s2:89c25.1.2.3.0.1.2", Tp: "2026-11-27T05:33:45.123456789Z",
		ExpiresAt: "2026-11-27T05:34:05.123456789Z", Desc: "fallen tree #l0x9k2.48213"}
	b.Run("append", func(b *testing.B) {
		for range b.N {
			appendPubJSON(make([]byte, 0, 256), &j)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		for range b.N {
			json.Marshal(j)
		}
	})
}
