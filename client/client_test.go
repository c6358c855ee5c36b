package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/client"
)

func dialT(t *testing.T, url, uid string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, url, client.Options{UID: uid, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), MinBackoff: 10 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestSubscribePublishQuery(t *testing.T) {
	_, url := running(t)
	ctx := ctxT(t)
	alice, bob := dialT(t, url, "alice"), dialT(t, url, "bob")

	early, err := bob.Publish(ctx, client.PublishRequest{Location: client.Cell("1.4"), Expires: time.Minute, Desc: "before", Attrs: map[string]string{"category": "traffic"}})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := alice.Subscribe(ctx, client.SubscribeRequest{Location: client.Cell("1.4.2"), Past: time.Minute, Future: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(sub.Past) != 1 || sub.Past[0].Pid != early.Pid || sub.Past[0].Desc != "before" || sub.Past[0].Attrs["category"] != "traffic" {
		t.Fatalf("past results %+v, want the publication %s", sub.Past, early.Pid)
	}
	if !sub.Live || sub.Cell != "1.4.2" || !sub.ExpiresAt.After(sub.Ts) {
		t.Fatalf("subscription %+v", sub)
	}
	pub, err := bob.Publish(ctx, client.PublishRequest{Location: client.Cell("1.4.2.3"), Expires: time.Minute, Desc: `say "hi"\n`})
	if err != nil {
		t.Fatal(err)
	}
	if pub.Matched != 1 {
		t.Fatalf("matched %d, want 1", pub.Matched)
	}
	select {
	case n := <-sub.C:
		p := n.Publication
		if p.Pid != pub.Pid || p.Desc != `say "hi"\n` || p.Uid != "bob" || p.Cell != "1.4.2.3" || !p.Tp.Equal(pub.Tp) || !p.ExpiresAt.Equal(pub.ExpiresAt) || n.Seq <= 0 {
			t.Fatalf("notification %+v, want %+v", n, pub)
		}
	case <-ctx.Done():
		t.Fatal("no notification")
	}

	res, err := alice.Query(ctx, client.QueryRequest{Attr: "category", Eq: "traffic"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Count != 1 || len(res.Publications) != 1 || res.Publications[0].Pid != early.Pid {
		t.Fatalf("query %+v", res)
	}

	if err := sub.Unsubscribe(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-sub.C; ok {
		t.Fatal("C open after unsubscribe")
	}
	if !errors.Is(sub.Err(), client.ErrCancelled) {
		t.Fatalf("ended with %v, want cancelled", sub.Err())
	}
}

func TestErrorsAreTyped(t *testing.T) {
	_, url := running(t)
	ctx := ctxT(t)
	c := dialT(t, url, "alice")
	_, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Cell("1.x")})
	var e *client.Error
	if !errors.Is(err, client.ErrBadRequest) || !errors.As(err, &e) || e.Message == "" {
		t.Fatalf("bad cell: %v", err)
	}
	sub, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Cell("1"), Future: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.Unsubscribe(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sub.Unsubscribe(ctx); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("cancelled twice: %v", err)
	}
	if _, err := c.Query(ctx, client.QueryRequest{Attr: "nope", Eq: "x"}); !errors.Is(err, client.ErrBadRequest) {
		t.Fatalf("unindexed query: %v", err)
	}
	if errors.Is(err, client.ErrOverloaded) {
		t.Fatal("a bad request is not overloaded")
	}
}

func TestNoFutureWindowEndsAtOnce(t *testing.T) {
	_, url := running(t)
	ctx := ctxT(t)
	c := dialT(t, url, "alice")
	sub, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Point(40.758, -73.9855), Past: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := <-sub.C; ok || sub.Live || !errors.Is(sub.Err(), client.ErrWindowOver) {
		t.Fatalf("live %v, err %v", sub.Live, sub.Err())
	}
}

// collect reads n distinct notifications off sub, failing on a repeat.
func collect(t *testing.T, ctx context.Context, sub *client.Subscription, want map[string]bool) {
	t.Helper()
	got := map[string]bool{}
	last := int64(0)
	for len(got) < len(want) {
		select {
		case n, ok := <-sub.C:
			if !ok {
				t.Fatalf("ended (%v) after %d of %d", sub.Err(), len(got), len(want))
			}
			if n.Seq <= last {
				t.Fatalf("seq %d after %d", n.Seq, last)
			}
			last = n.Seq
			pid := n.Publication.Pid
			if got[pid] {
				t.Fatalf("%s twice", pid)
			}
			if !want[pid] {
				t.Fatalf("%s was not published", pid)
			}
			got[pid] = true
		case <-ctx.Done():
			t.Fatalf("%d of %d notifications", len(got), len(want))
		}
	}
}

// publishBurst publishes n publications from w writers and returns their
// pids; each write is retried until it is acknowledged.
func publishBurst(t *testing.T, ctx context.Context, c *client.Client, n, w int, cell string) map[string]bool {
	t.Helper()
	var mu sync.Mutex
	pids := map[string]bool{}
	var wg sync.WaitGroup
	for k := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := k; i < n; i += w {
				for {
					p, err := c.Publish(ctx, client.PublishRequest{Location: client.Cell(cell), Expires: time.Minute, Desc: fmt.Sprint("burst ", i)})
					if err == nil {
						mu.Lock()
						pids[p.Pid] = true
						mu.Unlock()
						break
					}
					if ctx.Err() != nil {
						t.Error(err)
						return
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	return pids
}

func TestReconnectDuringBurstLosesNothing(t *testing.T) {
	b, _ := running(t)
	p := newProxy(t, b.HTTPAddr())
	ctx := ctxT(t)
	sub := dialT(t, p.url(), "alice")
	pub := dialT(t, "ws://"+b.HTTPAddr()+"/ws", "bob")
	s, err := sub.Subscribe(ctx, client.SubscribeRequest{Location: client.Cell("1.4"), Future: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// Another user's subscription on the same connection (open mode) is
	// resumed as that user.
	s2, err := sub.Subscribe(ctx, client.SubscribeRequest{UID: "carol", Location: client.Cell("1"), Future: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	cuts := make(chan int)
	go func() { // cut the subscriber's connection again and again mid-burst
		n := 0
		defer func() { cuts <- n }()
		for {
			select {
			case <-stop:
				return
			case <-time.After(30 * time.Millisecond):
			}
			// Once the last cut has been resumed, however long a loaded
			// machine takes.
			if sub.Stats().Resumes >= int64(2*n) {
				p.cut()
				n++
			}
		}
	}()
	n := 2000
	if testing.Short() {
		n = 600
	}
	want := publishBurst(t, ctx, pub, n, 8, "1.4.2")
	close(stop)
	t.Logf("%d cuts", <-cuts)
	collect(t, ctx, s, want)
	collect(t, ctx, s2, want)
	if st := sub.Stats(); st.Reconnects == 0 || st.Resumes == 0 {
		t.Fatalf("stats %+v: the cuts did not reach the client", st)
	}
	t.Logf("stats %+v", sub.Stats())
}

func TestBrokerRestartMidSubscription(t *testing.T) {
	dir, addr := t.TempDir(), freeAddr(t)
	b := startBroker(t, dir, addr)
	url := "ws://" + addr + "/ws"
	ctx := ctxT(t)
	sub, pub := dialT(t, url, "alice"), dialT(t, url, "bob")
	s, err := sub.Subscribe(ctx, client.SubscribeRequest{Location: client.Cell("2"), Future: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	want := publishBurst(t, ctx, pub, 200, 4, "2.1")
	// Some of them are read before the restart, and some only after.
	if err := b.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	b = startBroker(t, dir, addr)
	defer b.Shutdown(context.Background())
	for pid := range publishBurst(t, ctx, pub, 200, 4, "2.1.1") {
		want[pid] = true
	}
	collect(t, ctx, s, want)
	if st := sub.Stats(); st.Reconnects == 0 || st.Resumes != 1 {
		t.Fatalf("stats %+v, want a reconnect and one resume", st)
	}
}

// TestWindowEndIsAnnounced: the broker says when a subscription's window
// is over, after its last notification, so the subscription ends then and
// not a grace period later.
func TestWindowEndIsAnnounced(t *testing.T) {
	_, url := running(t)
	ctx := ctxT(t)
	c, err := client.Dial(ctx, url, client.Options{UID: "alice", EndGrace: time.Hour, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pub := dialT(t, url, "bob")
	sub, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Cell("9"), Future: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p, err := pub.Publish(ctx, client.PublishRequest{Location: client.Cell("9.9"), Expires: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if n := <-sub.C; n.Publication.Pid != p.Pid {
		t.Fatalf("notification %+v", n)
	}
	select {
	case _, ok := <-sub.C:
		if ok {
			t.Fatal("a second notification")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no end 10 s after the window, with an hour's grace: the broker did not say")
	}
	if !errors.Is(sub.Err(), client.ErrWindowOver) {
		t.Fatalf("ended with %v", sub.Err())
	}
}

// A publication made at a circle, a point or a polygon keeps its place,
// in past results and in notifications; one made at a cell has none.
func TestPublicationsKeepTheirPlace(t *testing.T) {
	_, url := running(t)
	ctx := ctxT(t)
	c := dialT(t, url, "alice")
	first, err := c.Publish(ctx, client.PublishRequest{Location: client.Circle(40.758, -73.9855, 300), Expires: time.Minute, Desc: "circle"})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Point(40.758, -73.9855), Past: time.Minute, Future: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(sub.Past) != 1 || sub.Past[0].Pid != first.Pid || sub.Past[0].At == nil ||
		*sub.Past[0].At != (client.Place{Lat: 40.758, Lng: -73.9855, RadiusM: 300}) {
		t.Fatalf("past results %+v, want the circle's place", sub.Past)
	}
	if _, err := c.Publish(ctx, client.PublishRequest{Location: client.Point(40.758, -73.9855), Expires: time.Minute, Desc: "point"}); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-sub.C:
		if at := n.Publication.At; at == nil || *at != (client.Place{Lat: 40.758, Lng: -73.9855}) || n.Publication.Polygon != nil {
			t.Fatalf("notification %+v, want the point's place", n.Publication)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no notification")
	}
	for _, where := range []client.Location{client.Polygon(midtown), client.Cell(sub.Cell)} {
		if _, err := c.Publish(ctx, client.PublishRequest{Location: where, Expires: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	if p := next(ctx, t, sub); p.At != nil || !sameGeoJSON(t, p.Polygon, midtown) {
		t.Fatalf("notification %+v, want the polygon", p)
	}
	if p := next(ctx, t, sub); p.At != nil || p.Polygon != nil || p.Cell != sub.Cell {
		t.Fatalf("notification %+v, want a cell's, with no place", p)
	}
}
