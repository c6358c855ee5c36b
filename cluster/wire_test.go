package cluster

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"

	"github.com/seed84792017/cellcast/delivery"
	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/geo"
	"github.com/seed84792017/cellcast/subscriptions"
)

func TestBatchRoundTrip(t *testing.T) {
	p := &subscriptions.Publication{Uid: "ann", Cell: subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1, 4, 2}}, Tp: 77, Tmax: 99,
		Desc: "fire", Attrs: map[string]string{"k": "v"}, Shape: mustCircle(40.7, -74, 10)}
	q := &subscriptions.Publication{Uid: "bo", Cell: subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{3}}, Tp: 80, Tmax: 90}
	var b batch
	b.note(1<<40, &delivery.Notification{Sid: "x-1.4", Uid: "bob", Seq: 12, Prev: 3, Pub: p, Body: []byte(`{"pid":"p"}`), Replayed: true})
	b.note(7, &delivery.Notification{Sid: "y-1", Uid: "cy", Seq: 5, Pub: q, Body: []byte(`{"pid":"q"}`)})
	b.ended(&lostRoute{Sid: "z-2", Why: delivery.EndWindow, Last: 9, Node: "n1"})
	b.reply("3f", encodeReply(&reply{Sid: "z-1", Match: 4}, nil))
	b.note(9, &delivery.Notification{Sid: "z-1", Uid: "di", Seq: 6, Prev: 5, Pub: p, Body: []byte(`{"pid":"p"}`)})
	var got []notification
	var ends []*lostRoute
	var order []string
	err := (&batchReader{
		notes: func(ns []notification) {
			for _, n := range ns {
				got = append(got, n)
				order = append(order, strconv.FormatUint(n.Route, 10))
			}
		},
		ended: func(l *lostRoute) { ends = append(ends, l); order = append(order, "end "+l.Sid) },
		replied: func(call string, data []byte) {
			r, err := decodeReply(data, newKeptRefs(0))
			if err != nil || r.Sid != "z-1" || r.Match != 4 {
				t.Fatalf("reply %+v: %v", r, err)
			}
			order = append(order, "reply "+call)
		},
	}).readBatch(b.buf)
	if err != nil {
		t.Fatal(err)
	}
	if want := "[1099511627776 7 end z-2 reply 3f 9]"; fmt.Sprint(order) != want {
		t.Fatalf("order %v, want %s", order, want)
	}
	a := got[0]
	if a.Route != 1<<40 || a.Seq != 12 || !a.Replayed || !bytes.Equal(a.Body, []byte(`{"pid":"p"}`)) ||
		a.Pub.Desc != "fire" || a.Pub.Tp != 77 || a.Pub.Attrs["k"] != "v" || a.Pub.Shape == nil || a.Pub.Shape.Kind() != geo.Circle {
		t.Fatalf("first: %+v", a)
	}
	if got[1].Route != 7 || got[1].Replayed || got[1].Pub.Uid != "bo" || got[2].Pub.Desc != "fire" || got[2].Seq != 6 || ends[0].Last != 9 || ends[0].Why != delivery.EndWindow {
		t.Fatalf("rest: %+v %+v %+v", got[1], got[2], ends[0])
	}
	// The first publication's record went out once.
	if n := bytes.Count(b.buf, []byte("fire")); n != 1 {
		t.Fatalf("publication encoded %d times", n)
	}
}

// FuzzNotes: a damaged batch from another node is an error, never a
// panic.
func FuzzNotes(f *testing.F) {
	var b batch
	p := &subscriptions.Publication{Uid: "a", Cell: subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{2}}, Tp: 5, Tmax: 9}
	b.note(3, &delivery.Notification{Sid: "s", Uid: "u", Seq: 1, Pub: p, Body: []byte("{}")})
	b.ended(&lostRoute{Sid: "s"})
	b.reply("a", encodeReply(&reply{Sid: "s"}, nil))
	f.Add(b.buf)
	f.Add([]byte{batchNote, 0})
	f.Add([]byte{batchReply, 1, 'a', 5})
	f.Fuzz(func(t *testing.T, data []byte) {
		(&batchReader{
			notes: func(ns []notification) {
				for _, n := range ns {
					if n.Pub == nil {
						t.Fatal("a notification without its publication")
					}
				}
			},
			ended:   func(*lostRoute) {},
			replied: func(_ string, data []byte) { decodeReply(data, newKeptRefs(0)) },
		}).readBatch(data)
	})
}

func mustCircle(lat, lng, r float64) *geo.Shape {
	s, err := geo.NewCircle(lat, lng, r)
	if err != nil {
		panic(err)
	}
	return s
}
