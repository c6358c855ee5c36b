package gateway

import (
	"encoding/json"
	"testing"

	"github.com/seed84792017/cellcast/delivery"
	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/geo"
	"github.com/seed84792017/cellcast/subscriptions"
)

// FuzzRequest feeds arbitrary frames to the request decoder and the
// location forms: they answer with a typed error or a valid cell, never a
// panic, and an error reply always encodes.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{
		`{"id":"1","op":"subscribe","cell":"1.4.2","past":"10s","future":10}`,
		`{"id":2,"op":"publish","lat":40.7,"lng":-74,"radius_m":500,"expires":"20s","attrs":{"k":"v"}}`,
		`{"op":"subscribe","topic":"sports/soccer","filter":{"keyword":"goal","attrs":{"a":"b"}}}`,
		`{"op":"subscribe","lat":42,"lng":-75,"radius_m":900,"cover":4}`,
		`{"op":"resume","sid":"abc-1.2","after":5}`, `{"id":{}}`, `[]`, `{"past":1e308}`,
		`{"op":"publish","polygon":{"type":"Polygon","coordinates":[[[-74,40.7],[-73.9,40.7],[-73.9,40.8],[-74,40.7]]]},"cover":6}`,
		`{"op":"query","near":{"lat":48.85,"lng":2.35,"radius_m":800},"k":5}`,
	} {
		f.Add([]byte(s))
	}
	loc, err := NewLocator(Grid{}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, e := decodeRequest(data)
		if e != nil {
			if !json.Valid(errorFrame(req.ID, e)) {
				t.Fatalf("error frame for %q is not JSON", data)
			}
			return
		}
		if req.Topic != nil {
			return // the registry would write; its paths have their own fuzz-free checks
		}
		at, err := loc.locate(req)
		c, cover := at.cell, at.cover
		if err == nil && c.ID.Validate(dewey.MaxDepth) != nil {
			t.Fatalf("locate(%q) = invalid %v", data, c)
		}
		if err == nil && (len(cover) == 1 || len(cover) > subscriptions.MaxCover || (cover != nil && cover[0].Compare(c) != 0)) {
			t.Fatalf("locate(%q) = cover %v of cell %v", data, cover, c)
		}
		if err == nil && at.shape != nil && (c.NS != subscriptions.NSCell || !geo.IsCell(c.ID)) {
			t.Fatalf("locate(%q) = a shape on %v", data, c)
		}
	})
}

func TestPubCacheRendersOnceAndEvictsOldest(t *testing.T) {
	c := newPubCache(2, 1<<20)
	renders := 0
	pub := func(tp int64) *subscriptions.Publication {
		return &subscriptions.Publication{Uid: "u", Cell: subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1, 2}}, Tp: tp, Tmax: tp + 10}
	}
	get := func(p *subscriptions.Publication) string {
		return string(c.get(p, func() []byte { renders++; return []byte(p.Uid + p.Cell.String()) }))
	}
	for _, tp := range []int64{1, 2, 1, 2} {
		if got := get(pub(tp)); got != "u1.2" {
			t.Fatalf("get(%d) = %q", tp, got)
		}
	}
	if renders != 2 {
		t.Fatalf("%d renders for 2 publications", renders)
	}
	get(pub(3)) // evicts 1
	get(pub(1))
	if renders != 4 || len(c.m) != 2 {
		t.Fatalf("after eviction: %d renders, %d cached", renders, len(c.m))
	}
	// Another shard's publication of a cached stamp is its own.
	other := pub(1)
	other.Cell.ID = dewey.ID{4, 4}
	if got := get(other); got != "u4.4" {
		t.Fatalf("a publication of the same stamp in another cell rendered %q", got)
	}
	reused := pub(1) // the cached one's cell, changed after it was cached
	get(reused)
	reused.Cell.ID[0] = 3
	if got := get(reused); got != "u3.2" {
		t.Fatalf("a reused publication rendered %q", got)
	}
	// The byte bound: five 60-byte bodies in a 250-byte cache keep four.
	c = newPubCache(100, 250)
	body := make([]byte, 60)
	for tp := int64(1); tp <= 5; tp++ {
		c.get(pub(tp), func() []byte { return body })
	}
	if _, ok := c.m[1]; ok || len(c.m) != 4 || c.bytes != 240 {
		t.Fatalf("byte bound: %d cached, %d bytes, oldest kept %v", len(c.m), c.bytes, ok)
	}
	if got := string(joinJSON([][]byte{[]byte(`1`), []byte(`{"a":2}`)})); got != `[1,{"a":2}]` {
		t.Fatalf("joinJSON = %s", got)
	}
	if got := string(joinJSON(nil)); got != `[]` {
		t.Fatalf("joinJSON(nil) = %s", got)
	}
}

// A NATS notification names the one before it, so a gap shows.
func TestNATSNotificationCarriesPrev(t *testing.T) {
	b := notificationFrame(&delivery.Notification{Sid: "s-1", Seq: 42, Prev: 17, Body: []byte(`{"pid":"p"}`)})
	var m struct {
		Op          string          `json:"op"`
		Sid         string          `json:"sid"`
		Seq         int64           `json:"seq"`
		Prev        int64           `json:"prev"`
		Publication json.RawMessage `json:"publication"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if m.Op != "notification" || m.Sid != "s-1" || m.Seq != 42 || m.Prev != 17 || string(m.Publication) != `{"pid":"p"}` {
		t.Fatalf("%s", b)
	}
}
