package client_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/client"
)

// TestQueryPlace: a query by place returns the live publications whose
// places meet a circle, a point or a polygon (cell-addressed ones by
// their cell's region, topics never), newest first, narrowed by K, time,
// publisher, attribute and filter; a CBOR client gets the same.
func TestQueryPlace(t *testing.T) {
	_, url := running(t)
	ctx := ctxT(t)
	c := dialT(t, url, "alice")
	descs := map[string]string{} // by pid, for messages
	publish := func(uid string, where client.Location, desc, category string) *client.Published {
		t.Helper()
		p, err := c.Publish(ctx, client.PublishRequest{UID: uid, Location: where, Expires: time.Minute, Desc: desc, Attrs: map[string]string{"category": category}})
		if err != nil {
			t.Fatal(desc, err)
		}
		descs[p.Pid] = desc
		// Room between stamps: the broker turns from into a past window
		// at its own now, a moment before the query's stamp.
		time.Sleep(50 * time.Millisecond)
		return p
	}
	times := publish("bob", client.Circle(timesLat, timesLng, 150), "Times Square", "traffic")
	bryant := publish("carol", client.Polygon(box(40.752, -73.986, 40.755, -73.981)), "Bryant Park", "works")
	park := publish("bob", client.Point(40.7812, -73.9665), "Central Park", "traffic")
	louvre := publish("bob", client.Point(louvreLat, louvreLng), "the Louvre", "traffic")
	cite := publish("carol", client.Polygon(box(48.853, 2.340, 48.857, 2.352)), "Île de la Cité", "works")
	face := publish("bob", client.Cell("5.2"), "a region around New York", "traffic")
	publish("bob", client.Topic("news/ny"), "a topic: nowhere", "traffic")

	near1km := client.Circle(timesLat, timesLng, 1000)
	parisBox := client.Polygon(box(48.84, 2.32, 48.87, 2.36))
	for _, q := range []struct {
		name  string
		query client.PlaceQuery
		place string
		want  []*client.Published
	}{
		{"near", client.PlaceQuery{Place: near1km}, "near", []*client.Published{face, bryant, times}},
		{"near, covered", client.PlaceQuery{Place: near1km.Cover(2)}, "near", []*client.Published{face, bryant, times}},
		{"near, k 1", client.PlaceQuery{Place: near1km, K: 1}, "near", []*client.Published{face}},
		{"near, traffic", client.PlaceQuery{Place: near1km, Attr: "category", Eq: "traffic"}, "near", []*client.Published{face, times}},
		{"near, carol's", client.PlaceQuery{Place: near1km, Attr: "uid", Eq: "carol"}, "near", []*client.Published{bryant}},
		{"near, from", client.PlaceQuery{Place: near1km, From: times.Tp.Add(time.Nanosecond)}, "near", []*client.Published{face, bryant}},
		{"near, to", client.PlaceQuery{Place: near1km, To: park.Tp.Add(-time.Nanosecond)}, "near", []*client.Published{bryant, times}},
		{"near, from and to", client.PlaceQuery{Place: near1km, From: times.Tp.Add(time.Nanosecond), To: park.Tp.Add(-time.Nanosecond)}, "near", []*client.Published{bryant}},
		{"near, keyword", client.PlaceQuery{Place: near1km, Filter: &client.Filter{Keyword: "PARK"}}, "near", []*client.Published{bryant}},
		{"near a point", client.PlaceQuery{Place: client.Point(timesLat, timesLng)}, "near", []*client.Published{face, times}},
		{"near Brooklyn", client.PlaceQuery{Place: client.Circle(brooklynLat, brooklynLng, 500)}, "near", []*client.Published{face}},
		{"within Paris", client.PlaceQuery{Place: parisBox}, "within", []*client.Published{cite, louvre}},
		{"within Paris, works", client.PlaceQuery{Place: parisBox, Attr: "category", Eq: "works"}, "within", []*client.Published{cite}},
		{"within Manhattan", client.PlaceQuery{Place: client.Polygon(box(40.745, -74.0, 40.785, -73.95))}, "within", []*client.Published{face, park, bryant, times}},
		{"within both", client.PlaceQuery{Place: client.Polygon([]byte(`{"type":"MultiPolygon","coordinates":[` +
			`[[[-73.99,40.755],[-73.98,40.755],[-73.98,40.761],[-73.99,40.761],[-73.99,40.755]]],` +
			`[[[2.33,48.855],[2.339,48.855],[2.339,48.865],[2.33,48.865],[2.33,48.855]]]]}`)).Cover(3)}, "within", []*client.Published{face, louvre, times}},
		{"nothing there", client.PlaceQuery{Place: client.Circle(-33.8688, 151.2093, 5000)}, "near", nil},
	} {
		res, err := c.QueryPlace(ctx, q.query)
		if err != nil {
			t.Fatalf("%s: %v", q.name, err)
		}
		var got, want []string
		for _, p := range res.Publications {
			got = append(got, descs[p.Pid])
		}
		for _, p := range q.want {
			want = append(want, descs[p.Pid])
		}
		if res.Place != q.place || res.Attr != "" || res.Count != len(q.want) || strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s: %s %d %q, want %s %d %q", q.name, res.Place, res.Count, got, q.place, len(want), want)
		}
	}

	// The polygon and the circle come back; a CBOR client reads the same.
	res, err := c.QueryPlace(ctx, client.PlaceQuery{Place: near1km})
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Publications[1]; p.Pid != bryant.Pid || !sameGeoJSON(t, p.Polygon, box(40.752, -73.986, 40.755, -73.981)) || p.At != nil {
		t.Fatalf("Bryant Park came back as %+v (polygon %s)", p, p.Polygon)
	}
	if p := res.Publications[2]; p.At == nil || *p.At != (client.Place{Lat: timesLat, Lng: timesLng, RadiusM: 150}) || p.Polygon != nil {
		t.Fatalf("Times Square came back as %+v", p)
	}
	cb := dialEnc(t, url, "alice", client.EncodingCBOR)
	res2, err := cb.QueryPlace(ctx, client.PlaceQuery{Place: near1km})
	if err != nil || !reflect.DeepEqual(res, res2) {
		t.Fatalf("CBOR client: %+v, %v\nJSON client: %+v", res2, err, res)
	}
	res2, err = cb.QueryPlace(ctx, client.PlaceQuery{Place: parisBox, K: 1})
	if err != nil || len(res2.Publications) != 1 || res2.Publications[0].Pid != cite.Pid || res2.Publications[0].Polygon == nil {
		t.Fatalf("CBOR client within Paris: %+v, %v", res2, err)
	}

	for _, b := range []struct {
		query         client.PlaceQuery
		prefix, holds string // of the error's message
	}{
		{client.PlaceQuery{Place: client.Polygon([]byte(`{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1]]]}`))}, "within: ", "polygon 0 ring 0 is not closed"},
		{client.PlaceQuery{Place: client.Circle(timesLat, timesLng, 0)}, "near.radius_m 0", "more than 0 metres"},
		{client.PlaceQuery{Place: client.Point(timesLat, 181)}, "near.", "lng 181 not in -180…180"},
		{client.PlaceQuery{Place: near1km, Eq: "traffic"}, "", "attr and eq together"},
		{client.PlaceQuery{Place: near1km, K: 1001}, "k must be 1 to 1000", ""},
		{client.PlaceQuery{Place: near1km.Cover(17)}, "cover 17", ""},
	} {
		_, err := c.QueryPlace(ctx, b.query)
		var e *client.Error
		if !errors.As(err, &e) || e.Code != "bad_request" || !strings.HasPrefix(e.Message, b.prefix) || !strings.Contains(e.Message, b.holds) {
			t.Errorf("%+v: %v, want bad_request %q…%q", b.query, err, b.prefix, b.holds)
		}
	}
	for _, where := range []client.Location{client.Cell("5"), client.Topic("news/ny"), {}, client.Polygon([]byte("[]"))} {
		if _, err := c.QueryPlace(ctx, client.PlaceQuery{Place: where}); !errors.Is(err, client.ErrBadLocation) {
			t.Errorf("query at %+v: %v, want ErrBadLocation", where, err)
		}
	}
}
