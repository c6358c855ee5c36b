package delivery

import (
	"context"
	"fmt"
	"math/rand"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/dualdb"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/subscriptions"
)

// sink records what reaches it. With cutAfter > 0 it refuses everything
// after that many notifications, as a transport does once it cuts a slow
// client.
type sink struct {
	mu       sync.Mutex
	got      map[string][]*Notification
	lost     map[string]bool
	cutAfter int
	n        int
}

func newSink() *sink { return &sink{got: map[string][]*Notification{}, lost: map[string]bool{}} }

func (k *sink) Notify(n *Notification) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.n++; k.cutAfter > 0 && k.n > k.cutAfter {
		return false
	}
	c := *n // the hub reuses n
	k.got[n.Sid] = append(k.got[n.Sid], &c)
	return true
}

func (k *sink) Ended(e End) {
	k.mu.Lock()
	k.lost[e.Sid] = true
	k.mu.Unlock()
}

func openHub(t *testing.T) (*Hub, *subscriptions.FakeClock) {
	h, clock, _ := openHubOver(t, nil)
	return h, clock
}

// openHubOver is openHub with the store wrapped by wrap, when not nil.
func openHubOver(t *testing.T, wrap func(subscriptions.Store) subscriptions.Store) (*Hub, *subscriptions.FakeClock, subscriptions.Store) {
	t.Helper()
	clock := subscriptions.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	cfg := listdb.Config{Clock: clock, Now: clock.Peek}
	st, err := dualdb.Open(t.TempDir(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var store subscriptions.Store = st
	if wrap != nil {
		store = wrap(st)
	}
	// MaxLag far away: tests of lag-driven overload set their own.
	h := New(Config{Store: store, Clock: st.Clock(), Encode: func(p *subscriptions.Publication) []byte { return []byte(p.Pid()) }, MaxLag: time.Hour})
	t.Cleanup(func() {
		h.Close()
		st.Close()
	})
	return h, clock, store
}

// subscribeTo makes a subscription routed to k and returns its sid.
func subscribeTo(t *testing.T, hub *Hub, k Sink, uid string, c subscriptions.Cell, future time.Duration) string {
	t.Helper()
	var sid string
	err := hub.Subscribe(context.Background(), &subscriptions.SubscribeRequest{Uid: uid, Cell: c, Future: future}, k,
		func(_ *subscriptions.SubscribeResult, s string) { sid = s })
	if err != nil {
		t.Fatal(err)
	}
	return sid
}

// chained checks that each notification of a sink names the one before
// it as Prev, the first one from: a subscriber can tell it missed nothing.
func chained(t *testing.T, sid string, ns []*Notification, from int64) {
	t.Helper()
	for _, n := range ns {
		if n.Prev != from {
			t.Fatalf("%s: seq %d has prev %d, want %d", sid, n.Seq, n.Prev, from)
		}
		from = n.Seq
	}
}

// publishIn publishes in c for a minute.
func publishIn(t *testing.T, hub *Hub, c subscriptions.Cell) {
	t.Helper()
	if err := hub.Publish(context.Background(), &subscriptions.PublishRequest{Uid: "p", Cell: c, Expires: time.Minute}, func(*subscriptions.PublishResult) {}); err != nil {
		t.Fatal(err)
	}
}

var cells = []string{"1", "1.2", "1.2.3", "1.2.3.4", "1.2.4", "1.3", "1.3.1", "1.3.1.1"}

// made is what the test did, for the oracle: every stored operation.
type made struct {
	mu   sync.Mutex
	subs []subscriptions.SubscribeResult
	pubs []subscriptions.Publication
}

// TestConcurrentDeliveryIsExactlyOnce runs publishers and subscribers on
// several goroutines against one hub. Every subscription must get each
// publication it meets exactly once — in its past results if the
// publication came first, else as a notification — with sequence numbers
// increasing.
func TestConcurrentDeliveryIsExactlyOnce(t *testing.T) {
	hub, clock := openHub(t)
	k := newSink()
	var m made
	ops := 3000
	if testing.Short() {
		ops = 800
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(g)))
			ctx := context.Background()
			for range ops {
				c := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.MustParse(cells[rng.Intn(len(cells))])}
				switch rng.Intn(10) {
				case 0:
					clock.Advance(time.Duration(rng.Intn(200)) * time.Millisecond)
				case 1, 2, 3:
					req := &subscriptions.SubscribeRequest{Uid: "u" + strconv.Itoa(g), Cell: c,
						Past: time.Duration(rng.Intn(5)) * time.Second, Future: time.Duration(1+rng.Intn(5)) * time.Second}
					err := hub.Subscribe(ctx, req, k, func(res *subscriptions.SubscribeResult, _ string) {
						m.mu.Lock()
						m.subs = append(m.subs, *res)
						m.mu.Unlock()
					})
					if err != nil {
						t.Error(err)
						return
					}
				default:
					req := &subscriptions.PublishRequest{Uid: "p", Cell: c, Expires: time.Duration(rng.Intn(5)) * time.Second}
					err := hub.Publish(ctx, req, func(res *subscriptions.PublishResult) {
						if res.Stored {
							m.mu.Lock()
							m.pubs = append(m.pubs, res.Pub)
							m.mu.Unlock()
						}
					})
					if err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	hub.Drain()
	if st := hub.Stats(); st.Waiting != 0 || st.Refused != 0 {
		t.Fatalf("stats after the run: %+v", st)
	}
	checked := 0
	for i := range m.subs {
		s := &m.subs[i].Sub
		seen := map[int64]string{}
		for _, p := range m.subs[i].Past {
			seen[p.Tp] = "past"
		}
		var last int64 = -1
		chained(t, s.Sid(), k.got[s.Sid()], 0)
		for _, n := range k.got[s.Sid()] {
			if n.Seq <= last {
				t.Fatalf("%s: seq %d after %d", s.Sid(), n.Seq, last)
			}
			last = n.Seq
			if n.Seq != n.Pub.Tp-s.Ts {
				t.Fatalf("%s: seq %d for a publication at +%d", s.Sid(), n.Seq, n.Pub.Tp-s.Ts)
			}
			if how, dup := seen[n.Pub.Tp]; dup {
				t.Fatalf("%s: %s twice (%s, then live)", s.Sid(), n.Pub.Pid(), how)
			}
			seen[n.Pub.Tp] = "live"
		}
		for j := range m.pubs {
			p := &m.pubs[j]
			want := subscriptions.Met(p, s)
			if _, got := seen[p.Tp]; got != want {
				t.Fatalf("%s (%v, %d…%d) and %s (expires %d): delivered %v, want %v", s.Sid(), s.Cell, s.Tmin, s.Tmax, p.Pid(), p.Tmax, got, want)
			}
			if want {
				checked++
			}
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d matches checked: the workload is too thin", checked)
	}
}

// TestResumeReplaysWhatWasMissed cuts a sink (some of its subscriptions
// detached first, then all refused) and resumes each subscription on a fresh sink from
// the last sequence number it got: the two together must hold every
// notification once.
func TestResumeReplaysWhatWasMissed(t *testing.T) {
	hub, _ := openHub(t)
	ctx := context.Background()
	rng := rand.New(rand.NewSource(7))
	first := newSink()
	first.cutAfter = 5000
	var subs []subscriptions.Subscription
	var pubs []subscriptions.Publication
	for i := range 2000 {
		c := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.MustParse(cells[rng.Intn(len(cells))])}
		switch {
		case i < 100:
			req := &subscriptions.SubscribeRequest{Uid: fmt.Sprint("u", i%5), Cell: c, Future: time.Hour}
			if err := hub.Subscribe(ctx, req, first, func(res *subscriptions.SubscribeResult, _ string) { subs = append(subs, res.Sub) }); err != nil {
				t.Fatal(err)
			}
		default:
			req := &subscriptions.PublishRequest{Uid: "p", Cell: c, Expires: time.Hour}
			if err := hub.Publish(ctx, req, func(res *subscriptions.PublishResult) { pubs = append(pubs, res.Pub) }); err != nil {
				t.Fatal(err)
			}
			if i == 1000 {
				hub.Drain()
				for _, s := range subs[:50] {
					hub.Detach(s.Sid(), first)
				}
			}
		}
	}
	hub.Drain()
	second := newSink()
	for _, s := range subs {
		var after int64
		if got := first.got[s.Sid()]; len(got) > 0 {
			after = got[len(got)-1].Seq
		}
		chained(t, s.Sid(), first.got[s.Sid()], 0)
		defer func() { chained(t, s.Sid(), second.got[s.Sid()], after) }()
		// A stranger may not resume it.
		if err := hub.Resume(ctx, s.Sid(), after, "intruder", second, nil); err == nil {
			t.Fatalf("%s resumed by another user", s.Sid())
		}
		// The hub hands the replay to the new sink itself.
		err := hub.Resume(ctx, s.Sid(), after, s.Uid, second, func(*subscriptions.ReplayResult) {})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Live again: the second sink gets what follows.
	for range 200 {
		c := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.MustParse(cells[rng.Intn(len(cells))])}
		if err := hub.Publish(ctx, &subscriptions.PublishRequest{Uid: "p", Cell: c, Expires: time.Hour}, func(res *subscriptions.PublishResult) { pubs = append(pubs, res.Pub) }); err != nil {
			t.Fatal(err)
		}
	}
	hub.Drain()
	for _, s := range subs {
		got := map[int64]bool{}
		for _, k := range []*sink{first, second} {
			for _, n := range k.got[s.Sid()] {
				if got[n.Pub.Tp] {
					t.Fatalf("%s: %s delivered twice", s.Sid(), n.Pub.Pid())
				}
				got[n.Pub.Tp] = true
			}
		}
		for j := range pubs {
			p := &pubs[j]
			if want := p.Tp > s.Ts && subscriptions.Met(p, &s); got[p.Tp] != want {
				t.Fatalf("%s and %s: delivered %v, want %v", s.Sid(), p.Pid(), got[p.Tp], want)
			}
		}
		if !first.lost[s.Sid()] && len(first.got[s.Sid()]) > 0 {
			// Subscriptions still routed to the first sink move and say so.
			if r := hub.routes[s.Ts]; r == nil || r.sink != second {
				t.Fatalf("%s not routed to the second sink", s.Sid())
			}
		}
	}
	hub.Drain()
	if st := hub.Stats(); st.Refused == 0 || st.Unrouted == 0 {
		t.Fatalf("the test cut nothing: %+v", st)
	}
}

func TestUnsubscribeChecksTheOwnerAndDropsTheRoute(t *testing.T) {
	hub, clock := openHub(t)
	ctx := context.Background()
	k := newSink()
	c := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.MustParse("1.2")}
	sid := subscribeTo(t, hub, k, "alice", c, time.Minute)
	if err := hub.Unsubscribe(ctx, sid, "bob", nil); err == nil {
		t.Fatal("bob cancelled alice's subscription")
	}
	if err := hub.Unsubscribe(ctx, sid, "alice", nil); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	hub.Expire(clock.Now())
	if !k.lost[sid] || hub.Stats().Routes != 0 {
		t.Fatalf("route kept after unsubscribe: lost=%v stats=%+v", k.lost[sid], hub.Stats())
	}
	publishIn(t, hub, c)
	hub.Drain()
	if len(k.got[sid]) != 0 {
		t.Fatal("notified after unsubscribe")
	}
	if err := hub.Resume(ctx, sid, 0, "alice", k, nil); err == nil {
		t.Fatal("resumed a cancelled subscription")
	}
}

func TestExpireDropsEndedRoutes(t *testing.T) {
	hub, clock := openHub(t)
	k := newSink()
	c := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.MustParse("1.2")}
	sids := map[time.Duration]string{}
	for _, f := range []time.Duration{time.Second, 5 * time.Second, time.Hour} {
		sids[f] = subscribeTo(t, hub, k, "u", c, f)
	}
	hub.Expire(clock.Now())
	if n := hub.Stats().Routes; n != 3 {
		t.Fatalf("%d routes before any ended", n)
	}
	clock.Advance(3 * time.Second)
	hub.Expire(clock.Now())
	if n := hub.Stats().Routes; n != 2 || !k.lost[sids[time.Second]] || k.lost[sids[5*time.Second]] {
		t.Fatalf("after 3 s: %d routes, lost %v", n, k.lost)
	}
	clock.Advance(10 * time.Second)
	hub.Expire(clock.Now())
	if n := hub.Stats().Routes; n != 1 || !k.lost[sids[5*time.Second]] || k.lost[sids[time.Hour]] {
		t.Fatalf("after 13 s: %d routes, lost %v", n, k.lost)
	}
}

// TestExpireKeepsRoutesPublicationsStillNeed holds a publication in the
// sequencer (behind an older operation) while its subscription ends and
// Expire runs: the route must stay until the publication is dispatched.
func TestExpireKeepsRoutesPublicationsStillNeed(t *testing.T) {
	hub, clock := openHub(t)
	k := newSink()
	c := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.MustParse("1.2")}
	sid := subscribeTo(t, hub, k, "u", c, time.Second)
	slow := hub.seq.beginPub() // an older publish still running
	publishIn(t, hub, c)
	clock.Advance(5 * time.Second)
	hub.Expire(clock.Now())
	hub.seq.finish(slow, nil)
	hub.Drain()
	if len(k.got[sid]) != 1 {
		t.Fatalf("the held publication reached the subscription %d times", len(k.got[sid]))
	}
	hub.Expire(clock.Now())
	if n := hub.Stats().Routes; n != 0 {
		t.Fatalf("%d routes once nothing needs them", n)
	}
}

// TestUnsubscribeKeepsEarlierPublications cancels a subscription while a
// publication stamped before the cancel waits in the sequencer: it still
// reaches the subscriber, and nothing after the cancel does.
func TestUnsubscribeKeepsEarlierPublications(t *testing.T) {
	hub, _ := openHub(t)
	ctx := context.Background()
	k := newSink()
	c := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.MustParse("1.2")}
	sid := subscribeTo(t, hub, k, "u", c, time.Hour)
	slow := hub.seq.beginPub()
	publishIn(t, hub, c)
	if err := hub.Unsubscribe(ctx, sid, "u", nil); err != nil {
		t.Fatal(err)
	}
	publishIn(t, hub, c)
	hub.seq.finish(slow, nil)
	hub.Drain()
	if len(k.got[sid]) != 1 {
		t.Fatalf("%d notifications, want the one published before the cancel", len(k.got[sid]))
	}
}

// gated stops every Subscribe after the store has done it, until the test
// lets it go on.
type gated struct {
	subscriptions.Store
	stored, resume chan struct{}
}

func (g *gated) Subscribe(ctx context.Context, req *subscriptions.SubscribeRequest) (*subscriptions.SubscribeResult, error) {
	res, err := g.Store.Subscribe(ctx, req)
	g.stored <- struct{}{}
	<-g.resume
	return res, err
}

// TestPublicationsDoNotWaitForSubscribes publishes while a SUBSCRIBE is
// stored but has not answered: the publication reaches its other
// subscriber at once, and the new subscription gets it after its answer,
// exactly once.
func TestPublicationsDoNotWaitForSubscribes(t *testing.T) {
	g := &gated{stored: make(chan struct{}), resume: make(chan struct{})}
	hub, _, _ := openHubOver(t, func(st subscriptions.Store) subscriptions.Store { g.Store = st; return g })
	c := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.MustParse("1.2")}
	early := newSink()
	go func() { <-g.stored; g.resume <- struct{}{} }()
	earlySid := subscribeTo(t, hub, early, "u", c, time.Hour)

	late := newSink()
	answered := make(chan int, 1) // notifications late held when answered
	done := make(chan error, 1)
	go func() {
		done <- hub.Subscribe(context.Background(), &subscriptions.SubscribeRequest{Uid: "v", Cell: c, Future: time.Hour}, late,
			func(*subscriptions.SubscribeResult, string) {
				late.mu.Lock()
				answered <- late.n
				late.mu.Unlock()
			})
	}()
	<-g.stored
	publishIn(t, hub, c)
	hub.Drain()
	early.mu.Lock()
	n := len(early.got[earlySid])
	early.mu.Unlock()
	if n != 1 {
		t.Fatalf("the publication waited for an unrelated subscribe: %d notifications", n)
	}
	g.resume <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := <-answered; n != 0 {
		t.Fatalf("%d notifications reached the new subscription before its answer", n)
	}
	publishIn(t, hub, c)
	hub.Drain()
	late.mu.Lock()
	defer late.mu.Unlock()
	if late.n != 2 {
		t.Fatalf("the new subscription got %d notifications, want the one published while it was answering and the next", late.n)
	}
	for _, ns := range late.got {
		if len(ns) != 2 || ns[0].Seq >= ns[1].Seq {
			t.Fatalf("notifications out of order: %+v", ns)
		}
	}
	if len(hub.recent) != 0 {
		t.Fatalf("%d dispatched publications kept once no subscribe runs", len(hub.recent))
	}
}
