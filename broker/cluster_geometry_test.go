package broker

import (
	"fmt"
	"slices"
	"testing"

	"github.com/seed84792017/cellcast/cluster"
	"github.com/seed84792017/cellcast/geo"
	"github.com/seed84792017/cellcast/geo/geotest"
)

// TestClusterGeometry: on three nodes, matches are refined at the shard
// owner as on one. A 1 km circle hears the incident 500 m away and not
// the one 5 km away, in New York and in Paris, each client on its own
// node; a circle across two of the shards' subtrees (its subscription
// lives in the overflow shard) hears incidents on both sides once each;
// a query by place asks the right shard.
func TestClusterGeometry(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	brokers := startCluster(t, 3)
	conns := make([]*client, len(brokers))
	for i, b := range brokers {
		conns[i] = dial(t, b, nil)
	}
	sub, pub := conns[0], conns[1]
	for _, ci := range cities {
		s := sub.do(msg{"op": "subscribe", "uid": "me", "lat": ci.lat, "lng": ci.lng, "radius_m": 1000, "future": "1m"})
		wantOp(t, s, "subscribed")
		nlat, nlng := ci.near()
		flat, flng := ci.far()
		f := pub.do(msg{"op": "publish", "uid": "reporter", "lat": flat, "lng": flng, "radius_m": 100, "expires": "1m", "desc": "far " + ci.name})
		n := pub.do(msg{"op": "publish", "uid": "reporter", "lat": nlat, "lng": nlng, "radius_m": 100, "expires": "1m", "desc": "near " + ci.name})
		if f["matched"] != 0.0 || n["matched"] != 1.0 {
			t.Fatalf("%s: far matched %v, near matched %v", ci.name, f["matched"], n["matched"])
		}
		sub.notes = nil
		if got := sub.wait(1); got[0]["publication"].(msg)["desc"] != "near "+ci.name || got[0]["sid"] != s["sid"] {
			t.Fatalf("%s: notified %v", ci.name, got)
		}
		// (Each shard a publication is stored in stamps it: the pid seen
		// through another shard than its home may differ.)
		q := conns[2].do(msg{"op": "query", "near": msg{"lat": ci.lat, "lng": ci.lng, "radius_m": 1000}})
		if got := results(q); len(got) != 1 || got[0]["desc"] != "near "+ci.name {
			t.Fatalf("%s: query near: %v", ci.name, q)
		}
	}
	sub.quiet()

	// Where four subtrees at the shard depth meet: the centre of a cell
	// one level up.
	id, _ := geo.PointCell(40.758, -73.9855, cluster.DefaultShardDepth-2)
	cid, _ := geo.CellID(id)
	c := cid.LatLng()
	lat, lng := c.Lat.Degrees(), c.Lng.Degrees()
	s := sub.do(msg{"op": "subscribe", "uid": "me", "lat": lat, "lng": lng, "radius_m": 1000, "future": "1m"})
	wantOp(t, s, "subscribed")
	var cells []string
	for _, x := range s["cover"].([]any) {
		cells = append(cells, x.(string))
	}
	if len(cells) < 2 {
		t.Fatalf("a circle across subtrees on one cell: %v", s)
	}
	var descs []string
	for k := range 4 { // one incident in each quarter
		plat, plng := geotest.Destination(lat, lng, 600, 0.78+1.5708*float64(k))
		desc := fmt.Sprint("quarter ", k)
		wantOp(t, pub.do(msg{"op": "publish", "uid": "reporter", "lat": plat, "lng": plng, "radius_m": 50, "expires": "1m", "desc": desc}), "published")
		descs = append(descs, desc)
	}
	sub.notes = nil
	var got []string
	for _, n := range sub.wait(4) {
		got = append(got, n["publication"].(msg)["desc"].(string))
	}
	slices.Sort(got)
	if !slices.Equal(got, descs) {
		t.Fatalf("across subtrees: notified %v, want %v", got, descs)
	}
	sub.quiet()
}
