package client_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/client"
)

// TestCover runs circle covers through a broker over WebSocket: a circle
// without Cover lies on the broker's default cover (up to 8 cells), one
// with Cover(4) on at most 4; a covered subscription hears what meets its
// circle once, however many of its cells the publication overlaps, and
// not what only its cells reach (exact geometry decides); past results
// and cancels hold for every cell.
func TestCover(t *testing.T) {
	_, url := running(t)
	ctx := ctxT(t)
	c := dialT(t, url, "alice")
	lat, lng := upstate(t)
	covered, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Circle(lat, lng, 300).Cover(4), Future: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Circle(lat, lng, 300), Future: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(covered.Cover) < 2 || len(covered.Cover) > 4 || covered.Cover[0] != covered.Cell || !strings.HasSuffix(covered.Sid, "-"+covered.Cell) {
		t.Fatalf("covered subscription %+v: want 2 to 4 cells, the first its own", covered)
	}
	if len(plain.Cover) < 2 || len(plain.Cover) > 8 {
		t.Fatalf("plain circle on %v: want the default cover, 2 to 8 cells around a corner", plain.Cover)
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
	at := func(north, east float64) client.Location { return client.Point(offset(lat, lng, north, east)) }
	outLat, outLng := outsideInCover(t, lat, lng, 300, covered.Cover)
	inCircle := []*client.Published{
		publish(at(70, 70), "north-east of the corner", 2),
		publish(at(-70, -70), "south-west of the corner", 2),
		publish(client.Cell(covered.Cell), "the covered circle's first cell", 2),
		publish(client.Cell("5"), "the whole face", 2),
		publish(client.Circle(lat, lng, 200).Cover(4), "a covered circle over several", 2),
		publish(client.Circle(outLat, outLng, 1000), "a wide circle that reaches in", 2),
	}
	publish(client.Point(outLat, outLng), "in a covered cell, outside the circle", 0)
	publish(client.Circle(outLat, outLng, 10), "a small circle there", 0)
	publish(client.Point(48.8566, 2.3522), "in Paris", 0)
	last := publish(at(60, -60), "north-west, last", 2)
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
	// Past results: each publication that meets the circle, once.
	past, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Circle(lat, lng, 300).Cover(4), Past: time.Minute})
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
	publish(at(10, 10), "after the cancel", 1)
	for _, where := range []client.Location{
		client.Point(lat, lng).Cover(4), client.Cell("5").Cover(4), client.Topic("a/b").Cover(2),
		client.Circle(lat, lng, 300).Cover(17), client.Polygon(box(40.7, -74, 40.8, -73.9)).Cover(17),
	} {
		_, err := c.Subscribe(ctx, client.SubscribeRequest{Location: where, Future: time.Minute})
		if !errors.Is(err, client.ErrBadRequest) {
			t.Fatalf("subscribe at %+v: %v, want bad_request", where, err)
		}
	}
}
