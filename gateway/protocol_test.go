package gateway

import (
	"encoding/json"
	"testing"

	"github.com/seed84792017/cellcast/dewey"
)

// FuzzRequest feeds arbitrary frames to the request decoder and the
// location forms: they answer with a typed error or a valid cell, never a
// panic, and an error reply always encodes.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{
		`{"id":"1","op":"subscribe","cell":"1.4.2","past":"10s","future":10}`,
		`{"id":2,"op":"publish","lat":40.7,"lng":-74,"radius_m":500,"expires":"20s","attrs":{"k":"v"}}`,
		`{"op":"subscribe","topic":"sports/soccer","filter":{"keyword":"goal","attrs":{"a":"b"}}}`,
		`{"op":"resume","sid":"abc-1.2","after":5}`, `{"id":{}}`, `[]`, `{"past":1e308}`,
	} {
		f.Add([]byte(s))
	}
	tree, err := dewey.NewQuadTree(dewey.NewYorkState, 12)
	if err != nil {
		f.Fatal(err)
	}
	loc := &locator{tree: tree}
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
		c, err := loc.locate(req)
		if err == nil && c.ID.Validate(dewey.MaxDepth) != nil {
			t.Fatalf("locate(%q) = invalid %v", data, c)
		}
	})
}
