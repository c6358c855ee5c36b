package broker

import (
	"testing"
)

// TestPublicationKeepsItsPoint: a publication made at a point or a circle
// carries its lat, lng and radius_m in notifications, past results and
// query results, across a restart; one made at a cell carries none.
func TestPublicationKeepsItsPoint(t *testing.T) {
	dir := t.TempDir()
	b := start(t, Config{DataDir: dir})
	c := dial(t, b, nil)
	wantOp(t, c.do(msg{"op": "subscribe", "uid": "sub", "cell": "1", "future": "1m"}), "subscribed")
	wantOp(t, c.do(msg{"op": "publish", "uid": "bob", "lat": 40.758, "lng": -73.9855, "radius_m": 500, "expires": "10m", "desc": "circle", "attrs": msg{"category": "fire"}}), "published")
	wantOp(t, c.do(msg{"op": "publish", "uid": "bob", "lat": 40.7, "lng": -74.0, "expires": "10m", "desc": "point", "attrs": msg{"category": "fire"}}), "published")
	wantOp(t, c.do(msg{"op": "publish", "uid": "bob", "cell": "1.1", "expires": "10m", "desc": "cell", "attrs": msg{"category": "fire"}}), "published")
	check := func(where string, pubs []msg) {
		t.Helper()
		want := map[string][3]any{"circle": {40.758, -73.9855, 500.0}, "point": {40.7, -74.0, nil}, "cell": {nil, nil, nil}}
		if len(pubs) != 3 {
			t.Fatalf("%s: %d publications, want 3", where, len(pubs))
		}
		for _, p := range pubs {
			w := want[p["desc"].(string)]
			if p["lat"] != w[0] || p["lng"] != w[1] || p["radius_m"] != w[2] {
				t.Errorf("%s: %v: lat %v lng %v radius_m %v, want %v", where, p["desc"], p["lat"], p["lng"], p["radius_m"], w)
			}
		}
	}
	var notes []msg
	for _, n := range c.wait(3) {
		notes = append(notes, n["publication"].(msg))
	}
	check("notifications", notes)
	for round := range 2 {
		check("past results", results(c.do(msg{"op": "subscribe", "uid": "late", "cell": "1", "past": "1h"})))
		check("query results", results(c.do(msg{"op": "query", "attr": "category", "eq": "fire", "k": 10})))
		if round == 0 {
			if err := b.Shutdown(t.Context()); err != nil {
				t.Fatal(err)
			}
			b = start(t, Config{DataDir: dir})
			c = dial(t, b, nil)
		}
	}
}
