package cluster

import (
	"bytes"
	"errors"
	"math/rand"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/geo/geotest"
	"github.com/seed84792017/cellcast/subscriptions"
)

func randCell(rng *rand.Rand) subscriptions.Cell {
	id := make(dewey.ID, 1+rng.Intn(8))
	for i := range id {
		id[i] = uint32(1 + rng.Intn(4))
	}
	if rng.Intn(4) == 0 {
		return subscriptions.Cell{NS: subscriptions.NSTopic, ID: id}
	}
	return subscriptions.Cell{NS: subscriptions.NSCell, ID: id}
}

func randCover(rng *rand.Rand, first subscriptions.Cell) *subscriptions.Cover {
	if rng.Intn(3) > 0 {
		return nil
	}
	c := &subscriptions.Cover{Cells: []subscriptions.Cell{first}}
	for range 1 + rng.Intn(4) {
		c.Cells = append(c.Cells, randCell(rng))
	}
	return c
}

func randAttrs(rng *rand.Rand) map[string]string {
	if rng.Intn(2) == 0 {
		return nil
	}
	m := map[string]string{}
	for i := range 1 + rng.Intn(3) {
		m["k"+strconv.Itoa(i)] = strconv.Itoa(rng.Intn(1000))
	}
	return m
}

func randPub(rng *rand.Rand) subscriptions.Publication {
	p := subscriptions.Publication{Uid: "u" + strconv.Itoa(rng.Intn(50)), Cell: randCell(rng), Tp: rng.Int63n(1 << 50), Desc: []string{"", "fire", "ünïcode"}[rng.Intn(3)], Attrs: randAttrs(rng)}
	p.Tmax = p.Tp + rng.Int63n(1e12)
	p.Cover = randCover(rng, p.Cell)
	if rng.Intn(2) == 0 {
		lat, lng := geotest.Place(rng)
		p.Shape = geotest.Shape(rng, lat, lng, 500)
	}
	return p
}

func randSub(rng *rand.Rand) subscriptions.Subscription {
	s := subscriptions.Subscription{Uid: "u" + strconv.Itoa(rng.Intn(50)), Cell: randCell(rng), Ts: rng.Int63n(1 << 50), SelfJoin: rng.Intn(2) == 0,
		Filter: subscriptions.Filter{Keyword: []string{"", "smoke"}[rng.Intn(2)], Attrs: randAttrs(rng)}}
	s.Tmin, s.Tmax = s.Ts-rng.Int63n(1e12), s.Ts+rng.Int63n(1e12)
	s.Cover = randCover(rng, s.Cell)
	return s
}

func randPubs(rng *rand.Rand) []subscriptions.Publication { return randList(rng, 5, randPub) }

func randReply(rng *rand.Rand) *reply {
	r := &reply{Sid: []string{"", "1700000000000000000-1.2"}[rng.Intn(2)], Node: []string{"", "n2"}[rng.Intn(2)],
		Match: rng.Intn(5000), N: rng.Intn(300), More: rng.Intn(2) == 0}
	if rng.Intn(4) == 0 {
		r.Err = &wireError{Kind: "overloaded", Msg: "too busy", Retry: time.Duration(rng.Int63n(int64(time.Minute)))}
	}
	if rng.Intn(2) == 0 {
		r.SubR = &subscriptions.SubscribeResult{Sub: randSub(rng), Stored: rng.Intn(2) == 0, Past: randPubs(rng)}
	}
	if rng.Intn(2) == 0 {
		r.PubR = &subscriptions.PublishResult{Pub: randPub(rng), Stored: rng.Intn(2) == 0, Recent: randPubs(rng)}
	}
	if rng.Intn(3) == 0 {
		r.Rep = &subscriptions.ReplayResult{Sub: randSub(rng), Now: rng.Int63(), Pubs: randPubs(rng)}
	}
	r.Pubs = randPubs(rng)
	r.Prior = randSubs(rng)
	return r
}

func randSubs(rng *rand.Rand) []subscriptions.Subscription { return randList(rng, 4, randSub) }

// TestReplyRoundTrip: a reply reads back as it was sent, but for a
// publish's matches, which stay on the owner.
func TestReplyRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := range 2000 {
		want := randReply(rng)
		b := encodeReply(want, nil)
		if want.PubR != nil {
			want.PubR.Matches = []subscriptions.Matched{{Ts: 5, Uid: "stays"}}
			b = encodeReply(want, nil)
			want.PubR.Matches = nil
		}
		got, err := decodeReply(b, newKeptRefs(0))
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("reply %d:\n got %+v\nwant %+v", i, got, want)
		}
	}
}

// TestReplyDamaged: every cut of a reply, and a reply of another
// format, is an error, never a panic or a shorter reply taken as whole.
func TestReplyDamaged(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for range 50 {
		b := encodeReply(randReply(rng), nil)
		for n := range len(b) {
			if _, err := decodeReply(b[:n], newKeptRefs(0)); !errors.Is(err, errBadReply) {
				t.Fatalf("cut at %d of %d: %v", n, len(b), err)
			}
		}
		if _, err := decodeReply(append(b, 0), newKeptRefs(0)); !errors.Is(err, errBadReply) {
			t.Fatalf("a byte over: %v", err)
		}
	}
	if _, err := decodeReply([]byte(`{"sid":"x"}`), newKeptRefs(0)); !errors.Is(err, errBadReply) {
		t.Fatalf("JSON: %v", err)
	}
}

// FuzzReply: what decodes encodes back to the same reply (compared by
// its encoding, which is canonical: a NaN is not DeepEqual to itself).
func FuzzReply(f *testing.F) {
	rng := rand.New(rand.NewSource(3))
	for range 5 {
		f.Add(encodeReply(randReply(rng), nil))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := decodeReply(data, newKeptRefs(0))
		if err != nil {
			return
		}
		b := encodeReply(r, nil)
		again, err := decodeReply(b, newKeptRefs(0))
		if err != nil || !bytes.Equal(encodeReply(again, nil), b) {
			t.Fatalf("%v: %+v then %+v", err, r, again)
		}
	})
}
