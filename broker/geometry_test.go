package broker

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	cellcast "github.com/seed84792017/cellcast/client"
	"github.com/seed84792017/cellcast/geo/geotest"
)

// city is where the geometry tests stand: a subscriber's 1 km circle, an
// incident 500 m away (which meets it) and one 5 km away (which does not).
type city struct {
	name     string
	lat, lng float64
}

var cities = []city{{"New York", 40.758, -73.9855}, {"Paris", 48.8566, 2.3522}}

// near and far are incidents of radius 100 m, 500 m north and 5 km east.
func (c city) near() (float64, float64) { return geotest.Destination(c.lat, c.lng, 500, 0) }
func (c city) far() (float64, float64)  { return geotest.Destination(c.lat, c.lng, 5000, 1.5708) }

// TestCircleHearsWhatMeetsIt is the refinement end to end over WebSocket:
// a subscriber with a 1 km circle hears the incident 500 m away and not
// the one 5 km away (whose cells its cover may well share), in two
// cities; the past results after a restart and a resume's replay say the
// same.
func TestCircleHearsWhatMeetsIt(t *testing.T) {
	dir := t.TempDir()
	b := start(t, Config{DataDir: dir})
	c := dial(t, b, nil)
	sids := map[string]string{}
	nearPid := map[string]string{}
	for _, ci := range cities {
		s := c.do(msg{"op": "subscribe", "uid": "me-" + ci.name, "lat": ci.lat, "lng": ci.lng, "radius_m": 1000, "future": "10m"})
		wantOp(t, s, "subscribed")
		sids[ci.name] = s["sid"].(string)
		nlat, nlng := ci.near()
		flat, flng := ci.far()
		n := c.do(msg{"op": "publish", "uid": "reporter", "lat": nlat, "lng": nlng, "radius_m": 100, "expires": "10m", "desc": "near " + ci.name})
		f := c.do(msg{"op": "publish", "uid": "reporter", "lat": flat, "lng": flng, "radius_m": 100, "expires": "10m", "desc": "far " + ci.name})
		wantOp(t, n, "published")
		wantOp(t, f, "published")
		if n["matched"] != 1.0 || f["matched"] != 0.0 {
			t.Fatalf("%s: near matched %v, far matched %v: want 1 and 0", ci.name, n["matched"], f["matched"])
		}
		nearPid[ci.name] = n["pid"].(string)
	}
	notes := c.wait(2)
	for _, n := range notes {
		p := n["publication"].(msg)
		if p["desc"] != "near New York" && p["desc"] != "near Paris" {
			t.Fatalf("notified of %v", p["desc"])
		}
	}
	c.quiet()
	if err := b.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	b = start(t, Config{DataDir: dir})
	c = dial(t, b, nil)
	for _, ci := range cities {
		// A new subscriber at the same circle gets the same as past results.
		s := c.do(msg{"op": "subscribe", "uid": "late-" + ci.name, "lat": ci.lat, "lng": ci.lng, "radius_m": 1000, "past": "10m"})
		if got := pidsOf(results(s)); !slices.Equal(got, []string{nearPid[ci.name]}) {
			t.Fatalf("%s after a restart: past results %v, want %s", ci.name, got, nearPid[ci.name])
		}
		// The first subscriber resumes from nothing received: the replay
		// holds the near incident only.
		r := c.do(msg{"op": "resume", "uid": "me-" + ci.name, "sid": sids[ci.name], "after": 0})
		wantOp(t, r, "resumed")
		if r["replayed"] != 1.0 {
			t.Fatalf("%s: resume replayed %v, want 1", ci.name, r["replayed"])
		}
		c.notes = nil
		if got := c.wait(1); got[0]["sid"] != sids[ci.name] || pidsOf(got)[0] != nearPid[ci.name] {
			t.Fatalf("%s: replayed %v", ci.name, got)
		}
		// A query by place sees both incidents with a 6 km circle, one with 1 km.
		q := c.do(msg{"op": "query", "near": msg{"lat": ci.lat, "lng": ci.lng, "radius_m": 1000}})
		if got := pidsOf(results(q)); q["place"] != "near" || !slices.Equal(got, []string{nearPid[ci.name]}) {
			t.Fatalf("%s: query near 1 km: %v", ci.name, q)
		}
		if q := c.do(msg{"op": "query", "near": msg{"lat": ci.lat, "lng": ci.lng, "radius_m": 6000}}); len(results(q)) != 2 {
			t.Fatalf("%s: query near 6 km: %v", ci.name, q)
		}
	}
}

// TestCircleOverNATS: the same rule for a client on NATS.
func TestCircleOverNATS(t *testing.T) {
	b := start(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	nc, err := cellcast.DialNATS(ctx, b.NATSURL(), cellcast.Options{UID: "me", Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for _, ci := range cities {
		s, err := nc.Subscribe(ctx, cellcast.SubscribeRequest{Location: cellcast.Circle(ci.lat, ci.lng, 1000), Future: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		nlat, nlng := ci.near()
		flat, flng := ci.far()
		far, err := nc.Publish(ctx, cellcast.PublishRequest{Location: cellcast.Circle(flat, flng, 100), Expires: time.Minute, Desc: "far"})
		if err != nil || far.Matched != 0 {
			t.Fatalf("%s: far %+v, %v", ci.name, far, err)
		}
		near, err := nc.Publish(ctx, cellcast.PublishRequest{Location: cellcast.Circle(nlat, nlng, 100), Expires: time.Minute, Desc: "near"})
		if err != nil || near.Matched != 1 {
			t.Fatalf("%s: near %+v, %v", ci.name, near, err)
		}
		select {
		case n := <-s.C:
			if n.Publication.Pid != near.Pid {
				t.Fatalf("%s: notified of %s (%s), want %s", ci.name, n.Publication.Pid, n.Publication.Desc, near.Pid)
			}
		case <-ctx.Done():
			t.Fatalf("%s: no notification", ci.name)
		}
		select {
		case n := <-s.C:
			t.Fatalf("%s: a second notification, of %s", ci.name, n.Publication.Desc)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TestPublicationKeepsItsShape: a publication made at a point, a circle
// or a polygon carries its shape in notifications, past results and
// query results, across a restart; one made at a cell carries none.
func TestPublicationKeepsItsShape(t *testing.T) {
	dir := t.TempDir()
	b := start(t, Config{DataDir: dir})
	c := dial(t, b, nil)
	const zone = `{"type":"Polygon","coordinates":[[[-74,40.7],[-73.9,40.7],[-73.9,40.8],[-74,40.7]]]}`
	face := "5" // New York's face of the grid
	wantOp(t, c.do(msg{"op": "subscribe", "uid": "sub", "cell": face, "future": "1m"}), "subscribed")
	wantOp(t, c.do(msg{"op": "publish", "uid": "bob", "lat": 40.758, "lng": -73.9855, "radius_m": 500, "expires": "10m", "desc": "circle", "attrs": msg{"category": "fire"}}), "published")
	wantOp(t, c.do(msg{"op": "publish", "uid": "bob", "lat": 40.7, "lng": -74.0, "expires": "10m", "desc": "point", "attrs": msg{"category": "fire"}}), "published")
	wantOp(t, c.do(msg{"op": "publish", "uid": "bob", "cell": face + ".1", "expires": "10m", "desc": "cell", "attrs": msg{"category": "fire"}}), "published")
	wantOp(t, c.do(msg{"op": "publish", "uid": "bob", "polygon": rawJSON(zone), "expires": "10m", "desc": "polygon", "attrs": msg{"category": "fire"}}), "published")
	check := func(where string, pubs []msg) {
		t.Helper()
		want := map[string][4]any{"circle": {40.758, -73.9855, 500.0, nil}, "point": {40.7, -74.0, nil, nil}, "cell": {nil, nil, nil, nil},
			"polygon": {nil, nil, nil, "Polygon"}}
		if len(pubs) != 4 {
			t.Fatalf("%s: %d publications, want 4", where, len(pubs))
		}
		for _, p := range pubs {
			w := want[p["desc"].(string)]
			var kind any
			if poly, ok := p["polygon"].(msg); ok {
				kind = poly["type"]
				if ring := poly["coordinates"].([]any)[0].([]any); len(ring) != 4 {
					t.Errorf("%s: polygon ring %v", where, ring)
				}
			}
			if p["lat"] != w[0] || p["lng"] != w[1] || p["radius_m"] != w[2] || kind != w[3] {
				t.Errorf("%s: %v: lat %v lng %v radius_m %v polygon %v, want %v", where, p["desc"], p["lat"], p["lng"], p["radius_m"], kind, w)
			}
		}
	}
	var notes []msg
	for _, n := range c.wait(4) {
		notes = append(notes, n["publication"].(msg))
	}
	check("notifications", notes)
	for round := range 2 {
		check("past results", results(c.do(msg{"op": "subscribe", "uid": "late", "cell": face, "past": "1h"})))
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

// rawJSON sends s as it is inside a request.
func rawJSON(s string) json.RawMessage { return json.RawMessage(s) }
