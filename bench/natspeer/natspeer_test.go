package natspeer

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/bench/workload"
	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/geo"
)

func startServer(t *testing.T) string {
	t.Helper()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(5 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(ns.Shutdown)
	return ns.ClientURL()
}

// overlaps is the oracle: one cell is a prefix of the other.
func overlaps(a, b dewey.ID) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// randomCell draws a cell of the world grid's shape (a face, then child
// positions, each + 1) from few values, so that many pairs overlap.
func randomCell(rng *rand.Rand) dewey.ID {
	c := make(dewey.ID, 1+rng.Intn(5))
	for i := range c {
		c[i] = uint32(1 + rng.Intn(3))
	}
	return c
}

// A subscription's subjects hear a publication on a cell's subject once
// when the two cells overlap, and never otherwise — on a real server.
func TestSubjectsHearOverlappingCellsOnce(t *testing.T) {
	nc, err := nats.Connect(startServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	rng := rand.New(rand.NewSource(1))
	subs := make([]dewey.ID, 40)
	got := make([]map[string]int, len(subs))
	var mu sync.Mutex // each NATS subscription calls back on its own goroutine
	var total atomic.Int64
	for i := range subs {
		subs[i], got[i] = randomCell(rng), map[string]int{}
		for _, subj := range Subjects(subs[i]) {
			if _, err := nc.Subscribe(subj, func(m *nats.Msg) {
				mu.Lock()
				got[i][string(m.Data)]++
				mu.Unlock()
				total.Add(1)
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	pubs := make([]dewey.ID, 60)
	for j := range pubs {
		pubs[j] = randomCell(rng)
		if err := nc.Publish(Subject(pubs[j]), []byte(fmt.Sprint(j))); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	want := int64(0)
	for _, s := range subs {
		for _, p := range pubs {
			if overlaps(s, p) {
				want++
			}
		}
	}
	// The handlers run after the flush; wait for them, then a little
	// longer for any message too many.
	for end := time.Now().Add(10 * time.Second); total.Load() < want && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	nc.Close()
	mu.Lock()
	defer mu.Unlock()
	for i, s := range subs {
		for j, p := range pubs {
			want := 0
			if overlaps(s, p) {
				want = 1
			}
			if n := got[i][fmt.Sprint(j)]; n != want {
				t.Fatalf("subscription at %v heard publication at %v %d times, want %d", s, p, n, want)
			}
		}
	}
}

// pairs is a workload of 30 subscriptions then 50 publications, and the
// overlapping pairs among them.
func pairs() ([]workload.Op, int64) {
	rng := rand.New(rand.NewSource(2))
	var ops []workload.Op
	for i := range 30 {
		ops = append(ops, workload.Op{Kind: workload.Subscribe, Uid: fmt.Sprint("u", i), Cell: randomCell(rng), Future: time.Hour})
	}
	var want int64
	for range 50 {
		p := workload.Op{Kind: workload.Publish, Uid: "p", Cell: randomCell(rng), Expires: time.Minute, Desc: "incident"}
		for _, s := range ops[:30] {
			if overlaps(s.Cell, p.Cell) {
				want++
			}
		}
		ops = append(ops, p)
	}
	return ops, want
}

// A run delivers each overlapping pair at most once and nothing else, with
// the connections free to run ahead of each other or kept within Ahead
// operations (the smallest lead that cannot stall them: five connections
// may each hold 3 operations of a partial window of 4). A slot a
// connection failed to give back would stall the run until its deadline.
func TestRunCountsEveryNotification(t *testing.T) {
	url := startServer(t)
	ops, want := pairs()
	for _, ahead := range []int{0, 16} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		rep, err := Run(ctx, Config{URL: url, Ops: ops, Conns: 3, PubConns: 2, Window: 4, Ahead: ahead, Settle: 200 * time.Millisecond})
		cancel()
		if err != nil {
			t.Fatalf("ahead %d: %v", ahead, err)
		}
		if rep.Subscribes != 30 || rep.Publishes != 50 || rep.Dropped != 0 {
			t.Fatalf("ahead %d: report %+v", ahead, rep)
		}
		// Publishers run beside the subscribers, so a pair arrives once or,
		// its subscription not yet in place, not at all; never twice.
		if rep.Notifications > want {
			t.Fatalf("ahead %d: %d notifications, want at most %d", ahead, rep.Notifications, want)
		}
		// Unbounded, every publication may go before any subscription is
		// in place (it did on a loaded machine). Within 16, a publication
		// goes only once all but 15 of the operations before it were
		// answered, so the last ones find most subscriptions in place.
		if ahead > 0 && rep.Notifications == 0 {
			t.Fatalf("ahead %d: no notification, want some of %d", ahead, want)
		}
	}
}

// A lead the connections' partial windows could fill is refused.
func TestRunRefusesALeadThatCouldStall(t *testing.T) {
	ops, _ := pairs()
	_, err := Run(context.Background(), Config{URL: "nats://127.0.0.1:1", Ops: ops, Conns: 3, PubConns: 2, Window: 4, Ahead: 15})
	if err == nil || !strings.Contains(err.Error(), "must exceed 15") {
		t.Fatalf("ahead 15 with 5 connections holding up to 3 each: %v", err)
	}
}

// A world-grid cell of level L is L+1 tokens: a subscription listens on
// its cell's subject, its L ancestors' and everything below, L+2 subjects.
func TestSubjectsOfAGridCell(t *testing.T) {
	cell, err := geo.PointCell(40.758, -73.9855, 16)
	if err != nil {
		t.Fatal(err)
	}
	subs := Subjects(cell)
	if len(subs) != 18 || subs[16] != Subject(cell) || subs[17] != Subject(cell)+".>" || subs[0] != Subject(cell[:1]) {
		t.Fatalf("subjects of %v: %q", cell, subs)
	}
}
