package cluster

import (
	"bytes"
	"testing"

	"github.com/seed84792017/cellcast/delivery"
	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/subscriptions"
)

func TestNotificationRoundTrip(t *testing.T) {
	p := &subscriptions.Publication{Uid: "ann", Cell: subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1, 4, 2}}, Tp: 77, Tmax: 99,
		Desc: "fire", Attrs: map[string]string{"k": "v"}, At: &subscriptions.Point{Lat: 40.7, Lng: -74, RadiusM: 10}}
	in := &delivery.Notification{Sid: "x-1.4", Uid: "bob", Seq: 12, Prev: 3, Pub: p, Body: []byte(`{"pid":"q"}`), Replayed: true}
	out, err := decodeNotification(encodeNotification(nil, in))
	if err != nil {
		t.Fatal(err)
	}
	if out.Sid != in.Sid || out.Uid != in.Uid || out.Seq != 12 || out.Prev != 3 || !out.Replayed || !bytes.Equal(out.Body, in.Body) ||
		out.Pub.Desc != "fire" || out.Pub.Tp != 77 || out.Pub.Attrs["k"] != "v" || out.Pub.At == nil || out.Pub.At.RadiusM != 10 {
		t.Fatalf("round trip: %+v", out)
	}
}

// FuzzNotification: a damaged notification from another node is an
// error, never a panic.
func FuzzNotification(f *testing.F) {
	p := &subscriptions.Publication{Uid: "a", Cell: subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{2}}, Tp: 5, Tmax: 9}
	f.Add(encodeNotification(nil, &delivery.Notification{Sid: "s", Uid: "u", Seq: 1, Pub: p, Body: []byte("{}")}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := decodeNotification(b)
		if err == nil && n == nil {
			t.Fatal("nil notification without an error")
		}
	})
}
