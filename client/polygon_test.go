package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/client"
	"github.com/seed84792017/cellcast/geo"
)

// Places in New York and Paris.
const (
	timesLat, timesLng       = 40.758, -73.9855
	brooklynLat, brooklynLng = 40.6782, -73.9442
	louvreLat, louvreLng     = 48.8606, 2.3376
)

// midtown is a box around Times Square, about 1.3 by 1.7 km.
var midtown = box(40.75, -73.995, 40.765, -73.975)

// sameGeoJSON reports whether two GeoJSON texts hold the same value.
func sameGeoJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

// next returns a subscription's next notification.
func next(ctx context.Context, t *testing.T, s *client.Subscription) client.Publication {
	t.Helper()
	select {
	case n := <-s.C:
		return n.Publication
	case <-ctx.Done():
		t.Fatalf("%s: no notification", s.Sid)
	}
	return client.Publication{}
}

// TestPolygon: a polygon publication reaches the subscriptions whose
// places meet it, by exact geometry (a circle just outside its edge, in
// cells its cover shares, does not hear it; nor one in its hole), and
// comes back with its polygon; polygon and MultiPolygon subscriptions
// hear what falls inside them.
func TestPolygon(t *testing.T) {
	_, url := running(t)
	ctx := ctxT(t)
	c := dialT(t, url, "reporter")
	sub := func(uid string, where client.Location) *client.Subscription {
		t.Helper()
		s, err := c.Subscribe(ctx, client.SubscribeRequest{UID: uid, Location: where, Future: time.Minute})
		if err != nil {
			t.Fatal(uid, err)
		}
		return s
	}
	shape, err := geo.ParseGeoJSON(midtown, 0)
	if err != nil {
		t.Fatal(err)
	}
	// 150 m east of the box's east edge, a circle of 100 m.
	edgeLat, edgeLng := offset(timesLat, -73.975, 0, 150)
	edge, err := geo.NewCircle(edgeLat, edgeLng, 100)
	if err != nil || shape.Intersects(edge) {
		t.Fatalf("the circle east of midtown meets it (%v): the test's premise is wrong", err)
	}
	inside := sub("alice", client.Circle(timesLat, timesLng, 200))
	brooklyn := sub("bob", client.Circle(brooklynLat, brooklynLng, 500))
	east := sub("dave", client.Circle(edgeLat, edgeLng, 100))
	paris := sub("carol", client.Polygon(box(48.85, 2.33, 48.87, 2.35)).Cover(4))
	both := sub("erin", client.Polygon([]byte(`{"type":"MultiPolygon","coordinates":[`+
		`[[[2.33,48.85],[2.35,48.85],[2.35,48.87],[2.33,48.87],[2.33,48.85]]],`+
		`[[[-73.99,40.755],[-73.98,40.755],[-73.98,40.761],[-73.99,40.761],[-73.99,40.755]]]]}`)))
	if len(paris.Cover) > 4 {
		t.Fatalf("paris on %v, more than its cover of 4", paris.Cover)
	}
	publish := func(where client.Location, desc string, matched int) *client.Published {
		t.Helper()
		p, err := c.Publish(ctx, client.PublishRequest{Location: where, Expires: time.Minute, Desc: desc})
		if err != nil {
			t.Fatal(desc, err)
		}
		if p.Matched != matched {
			t.Fatalf("%s matched %d subscriptions, want %d", desc, p.Matched, matched)
		}
		return p
	}
	mid := publish(client.Polygon(midtown), "midtown closed", 2) // alice, erin
	for _, s := range []*client.Subscription{inside, both} {
		p := next(ctx, t, s)
		if p.Pid != mid.Pid || p.At != nil || p.Cell != mid.Cell || !sameGeoJSON(t, p.Polygon, midtown) {
			t.Fatalf("%s heard %+v (polygon %s), want %s with its polygon", s.Sid, p, p.Polygon, mid.Pid)
		}
	}
	// A hole around Times Square keeps alice's circle and erin's piece out;
	// a circle inside the shell but not the hole hears it.
	loop := func(s, w, n, e float64) string {
		b := string(box(s, w, n, e))
		return b[strings.Index(b, "[[[")+1 : strings.LastIndex(b, "]]")+1]
	}
	holed := []byte(`{"type":"Polygon","coordinates":[` + loop(40.74, -74.01, 40.78, -73.96) + `,` + loop(40.752, -73.995, 40.764, -73.975) + `]}`)
	south := sub("frank", client.Circle(40.745, -73.985, 50))
	publish(client.Polygon(holed), "around midtown", 2) // frank, and dave east of the hole
	for _, s := range []*client.Subscription{south, east} {
		if p := next(ctx, t, s); !sameGeoJSON(t, p.Polygon, holed) {
			t.Fatalf("%s heard %+v, want the holed polygon", s.Sid, p)
		}
	}
	lv := publish(client.Point(louvreLat, louvreLng), "at the Louvre", 2) // carol, erin
	bk := publish(client.Point(brooklynLat, brooklynLng), "in Brooklyn", 1)
	for s, want := range map[*client.Subscription]string{paris: lv.Pid, both: lv.Pid, brooklyn: bk.Pid} {
		if p := next(ctx, t, s); p.Pid != want || p.At == nil || p.At.Lat == 0 || p.Polygon != nil {
			t.Fatalf("%s heard %+v, want %s at a point", s.Sid, p, want)
		}
	}
	// Nothing else came: the next publication everywhere is the first
	// each hears after these.
	last := publish(client.Polygon([]byte(`{"type":"MultiPolygon","coordinates":[`+
		`[[[-74.5,40.5],[-73.5,40.5],[-73.5,41],[-74.5,41],[-74.5,40.5]]],`+
		`[[[2,48.5],[2.7,48.5],[2.7,49],[2,49],[2,48.5]]]]}`)), "New York and Paris", 6)
	for _, s := range []*client.Subscription{inside, brooklyn, east, paris, both, south} {
		if p := next(ctx, t, s); p.Pid != last.Pid {
			t.Fatalf("%s heard %s (%s), want only %s", s.Sid, p.Pid, p.Desc, last.Pid)
		}
	}
}

// TestBadPlaces: the broker refuses bad polygons, coordinates and radii
// with bad_request naming the field; the client refuses a polygon that is
// not a JSON object without sending it.
func TestBadPlaces(t *testing.T) {
	_, url := running(t)
	ctx := ctxT(t)
	c := dialT(t, url, "alice")
	for _, b := range []struct {
		where client.Location
		msg   string
	}{
		{client.Polygon([]byte(`{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1]]]}`)), "polygon: polygon 0 ring 0 is not closed"},
		{client.Polygon([]byte(`{"type":"Point","coordinates":[0,0]}`)), "polygon: GeoJSON type \"Point\": want Polygon or MultiPolygon"},
		{client.Polygon(ring([2]float64{0, 0}, [2]float64{1, 1}, [2]float64{1, 0}, [2]float64{0, 1})), "polygon: polygon 0"},
		{client.Polygon(box(89, 0, 91, 1)), "lat 91 not in -90…90"},
		{client.Circle(timesLat, timesLng, 0), "radius_m 0: a circle's radius must be more than 0 metres"},
		{client.Point(91, 0), "lat 91 not in -90…90"},
	} {
		_, err := c.Subscribe(ctx, client.SubscribeRequest{Location: b.where, Future: time.Minute})
		_, err2 := c.Publish(ctx, client.PublishRequest{Location: b.where, Expires: time.Minute})
		for _, err := range []error{err, err2} {
			var e *client.Error
			if !errors.As(err, &e) || e.Code != "bad_request" || !strings.Contains(e.Message, b.msg) {
				t.Errorf("%+v: %v, want bad_request with %q", b.where, err, b.msg)
			}
		}
	}
	for _, text := range []string{"", "not json", "[1,2]", `"polygon"`, `{"type":`} {
		_, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Polygon([]byte(text)), Future: time.Minute})
		var e *client.Error
		if !errors.Is(err, client.ErrBadLocation) || errors.As(err, &e) {
			t.Errorf("polygon %q: %v, want ErrBadLocation before sending", text, err)
		}
	}
}

// TestGroupedPolygonsAreCopies: subscriptions of one connection that hear
// a polygon in one grouped frame get a copy each, in either encoding, so
// a handler that scribbles on its polygon changes no other's.
func TestGroupedPolygonsAreCopies(t *testing.T) {
	ctx := ctxT(t)
	for _, enc := range []client.Encoding{client.EncodingJSON, client.EncodingCBOR} {
		_, url := running(t) // a broker each: matched counts this connection's subscriptions
		c := dialEnc(t, url, "watcher", enc)
		heard := make(chan string, 16)
		for i, where := range []client.Location{client.Cell("5"), client.Circle(timesLat, timesLng, 100), client.Polygon(midtown)} {
			_, err := c.Subscribe(ctx, client.SubscribeRequest{Location: where, Future: time.Minute, Inline: true,
				Handler: func(n client.Notification) {
					p := n.Publication.Polygon
					if !json.Valid(p) || !sameGeoJSON(t, p, midtown) {
						t.Errorf("enc %d, subscription %d: polygon %q", enc, i, p)
					}
					for k := range p {
						p[k] = 'x'
					}
					heard <- n.Publication.Pid
				}})
			if err != nil {
				t.Fatal(err)
			}
		}
		for range 3 {
			p, err := c.Publish(ctx, client.PublishRequest{Location: client.Polygon(midtown), Expires: time.Minute})
			if err != nil || p.Matched != 3 {
				t.Fatalf("matched %v, %v; want 3", p, err)
			}
			for range 3 {
				select {
				case pid := <-heard:
					if pid != p.Pid {
						t.Fatalf("heard %s, want %s", pid, p.Pid)
					}
				case <-ctx.Done():
					t.Fatal("a notification is missing")
				}
			}
		}
	}
}
