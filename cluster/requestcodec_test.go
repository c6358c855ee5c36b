package cluster

import (
	"bytes"
	"errors"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/geo/geotest"
	"github.com/seed84792017/cellcast/service"
	"github.com/seed84792017/cellcast/subscriptions"
)

// randList is nil, empty, or 1 to n values of gen: the wire tells the
// three apart.
func randList[T any](rng *rand.Rand, n int, gen func(*rand.Rand) T) []T {
	switch rng.Intn(3) {
	case 0:
		return nil
	case 1:
		return []T{}
	}
	out := make([]T, 1+rng.Intn(n))
	for i := range out {
		out[i] = gen(rng)
	}
	return out
}

func randCells(rng *rand.Rand) []subscriptions.Cell { return randList(rng, 4, randCell) }

func randOptString(rng *rand.Rand) *string {
	if rng.Intn(2) == 0 {
		return nil
	}
	s := []string{"", "fire", "ä"}[rng.Intn(3)]
	return &s
}

func randRequest(rng *rand.Rand) *request {
	r := &request{Op: []string{opSubscribe, opPublish, opResume, opQuery, ""}[rng.Intn(5)], Holder: []string{"", "n1"}[rng.Intn(2)],
		Sid: []string{"", "1700000000000000000-1.2"}[rng.Intn(2)], After: rng.Int63() - rng.Int63(), Owner: []string{"", "ann"}[rng.Intn(2)],
		Route: rng.Uint64(), Epoch: rng.Uint64(), Skip: rng.Intn(1000) - 10}
	switch rng.Intn(3) {
	case 1:
		r.Sids = []string{}
	case 2:
		r.Sids = []string{"1700000000000000000-1.2", "", "ü-3"}[:1+rng.Intn(3)]
	}
	if rng.Intn(2) == 0 {
		r.Sub = &subscriptions.SubscribeRequest{Uid: "u", Cell: randCell(rng), Cover: randCells(rng), Past: time.Duration(rng.Int63()),
			Future: -time.Duration(rng.Intn(5)), SelfJoin: rng.Intn(2) == 0, Filter: subscriptions.Filter{Keyword: "kw", Attrs: randAttrs(rng)}}
		r.Sub.Prior = randSubs(rng)
		if rng.Intn(5) == 0 {
			r.Sub.Cell.ID[0] = 0 // not a valid cell, but it crosses as it is: the owner's store says so
		}
		if rng.Intn(2) == 0 {
			lat, lng := geotest.Place(rng)
			r.Sub.Shape = geotest.Shape(rng, lat, lng, 2000)
			r.Sub.Query = subscriptions.Narrow{Until: rng.Int63(), Publisher: "ann", Limit: rng.Intn(100)}
		}
	}
	if rng.Intn(2) == 0 {
		r.Pub = &subscriptions.PublishRequest{Uid: "p", Cell: randCell(rng), Cover: randCells(rng), Expires: time.Duration(rng.Int63n(1e12)),
			Desc: "desc", Attrs: randAttrs(rng), SelfJoin: rng.Intn(2) == 0}
		if rng.Intn(2) == 0 {
			lat, lng := geotest.Place(rng)
			r.Pub.Shape = geotest.Shape(rng, lat, lng, 500)
		}
	}
	if r.Sub != nil && r.Pub != nil {
		r.Pub.SelfJoin = r.Sub.SelfJoin // one flag carries both: no request has both
	}
	if rng.Intn(3) == 0 {
		r.Query = &service.Query{Attr: "kind", Eq: randOptString(rng), From: randOptString(rng), To: randOptString(rng), K: rng.Intn(100)}
	}
	return r
}

// TestRequestRoundTrip: a request reads back as it was sent.
func TestRequestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	for i := range 2000 {
		want := randRequest(rng)
		got, err := decodeRequest(encodeRequest(want))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("request %d:\n got %+v\nwant %+v", i, got, want)
		}
	}
}

// TestRequestDamaged: every cut of a request, and a JSON request of an
// older release, is an error, never a panic.
func TestRequestDamaged(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for range 50 {
		b := encodeRequest(randRequest(rng))
		for n := range len(b) {
			if _, err := decodeRequest(b[:n]); !errors.Is(err, errBadRequestWire) {
				t.Fatalf("cut at %d of %d: %v", n, len(b), err)
			}
		}
		if _, err := decodeRequest(append(b, 0)); !errors.Is(err, errBadRequestWire) {
			t.Fatalf("a byte over: %v", err)
		}
	}
	if _, err := decodeRequest([]byte(`{"op":"sub"}`)); !errors.Is(err, errBadRequestWire) {
		t.Fatalf("JSON: %v", err)
	}
}

// FuzzRequest: what decodes encodes back to the same request (compared
// by its encoding, which is canonical: a NaN is not DeepEqual to itself).
func FuzzRequest(f *testing.F) {
	rng := rand.New(rand.NewSource(6))
	for range 5 {
		f.Add(encodeRequest(randRequest(rng)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := decodeRequest(data)
		if err != nil {
			return
		}
		b := encodeRequest(r)
		again, err := decodeRequest(b)
		if err != nil || !bytes.Equal(encodeRequest(again), b) {
			t.Fatalf("%v: %+v then %+v", err, r, again)
		}
	})
}
