package client_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/client"
)

// A circle across the quad tree's first border: the centre of the New York
// State box, where its four quadrants meet.
const midLat, midLng = (40.49 + 45.02) / 2, (-79.77 - 71.85) / 2

// TestCover runs circle covers through a broker over WebSocket: a covered
// subscription hears what falls in its circle once, however many of its
// cells the publication overlaps, and not what falls only in the large
// cell a plain circle lands on; past results and cancels hold for every
// cell.
func TestCover(t *testing.T) {
	_, url := running(t)
	ctx := ctxT(t)
	c := dialT(t, url, "alice")
	covered, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Circle(midLat, midLng, 300).Cover(4), Future: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Circle(midLat, midLng, 300), Future: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(covered.Cover) != 4 || covered.Cover[0] != covered.Cell || !strings.HasSuffix(covered.Sid, "-"+covered.Cell) {
		t.Fatalf("covered subscription %+v: want four cells, the first its own", covered)
	}
	for _, cell := range covered.Cover {
		if strings.Count(cell, ".") <= strings.Count(plain.Cell, ".") {
			t.Fatalf("cover %v is no finer than the plain circle's cell %s", covered.Cover, plain.Cell)
		}
	}
	// matched is the broker's count of subscriptions reached: the covered
	// one counts once, whichever of its cells overlap.
	publish := func(where client.Location, desc string, matched int) *client.Published {
		t.Helper()
		p, err := c.Publish(ctx, client.PublishRequest{Location: where, Expires: time.Minute, Desc: desc})
		if err != nil {
			t.Fatal(err)
		}
		if p.Matched != matched {
			t.Fatalf("%s matched %d subscriptions, want %d", desc, p.Matched, matched)
		}
		return p
	}
	inCircle := []*client.Published{
		publish(client.Point(midLat+0.0005, midLng+0.0005), "north-east of the border", 2),
		publish(client.Point(midLat-0.0005, midLng-0.0005), "south-west of the border", 2),
		publish(client.Cell(plain.Cell), "the plain circle's cell, over all four", 2),
		publish(client.Circle(midLat, midLng, 200).Cover(4), "a covered circle over several", 2),
	}
	publish(client.Point(41, -78), "far off, in the plain circle's cell only", 1)
	last := publish(client.Point(midLat+0.0004, midLng-0.0004), "north-west, last", 2)
	inCircle = append(inCircle, last)
	// Notifications come in stamp order: once the last has come, every
	// earlier one has.
	var got []string
	for n := range covered.C {
		got = append(got, n.Publication.Pid)
		if n.Publication.Pid == last.Pid {
			break
		}
	}
	var want []string
	for _, p := range inCircle {
		want = append(want, p.Pid)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("covered subscription heard %v, want each of %v once", got, want)
	}
	// Past results: each publication in the circle once.
	past, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Circle(midLat, midLng, 300).Cover(4), Past: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for i := len(past.Past) - 1; i >= 0; i-- {
		got = append(got, past.Past[i].Pid)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("past results %v, want each of %v once", got, want)
	}
	// A cancel covers every cell: the plain subscription alone still hears.
	if err := covered.Unsubscribe(ctx); err != nil {
		t.Fatal(err)
	}
	publish(client.Cell(plain.Cell), "after the cancel", 1)
	for _, where := range []client.Location{client.Point(midLat, midLng).Cover(4), client.Cell("1").Cover(4), client.Circle(midLat, midLng, 300).Cover(17)} {
		_, err := c.Subscribe(ctx, client.SubscribeRequest{Location: where, Future: time.Minute})
		if !errors.Is(err, client.ErrBadRequest) {
			t.Fatalf("subscribe at %+v: %v, want bad_request", where, err)
		}
	}
}
