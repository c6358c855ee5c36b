package loadgen

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/bench/workload"
	"github.com/seed84792017/cellcast/broker"
	"github.com/seed84792017/cellcast/dewey"
)

func startBroker(t *testing.T) *broker.Broker {
	t.Helper()
	b, err := broker.Start(broker.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", NATSListen: "127.0.0.1:0",
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Shutdown(context.Background()) })
	return b
}

// smallWorkload lasts 3 s. Publications outlive it, so a cut connection
// can be resumed however far behind a loaded machine leaves the broker.
// Its cells are the world grid's, as cmd/loadgen's, from S2 level 6
// (about 150 km) to 12 (2.5 km), so that 300 users make some 50
// notifications a publication.
func smallWorkload(t *testing.T, seed int64, n int) []workload.Op {
	t.Helper()
	g, err := workload.New(workload.Config{Seed: seed, Ops: n, Users: 300, Space: workload.S2, MinLevel: 6, Level: 12, Rate: 2000,
		Past: 2 * time.Second, Future: 3 * time.Second, Expires: 30 * time.Second, SelfJoin: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	return g.All()
}

func check(t *testing.T, rep *Report) {
	t.Helper()
	c := rep.Completeness
	t.Logf("%d ops, %d notifications, %d past results, %d drops, %d resumes, latency %+v", rep.Ops, rep.Notifications, rep.PastResults, rep.Drops, rep.Resumes, rep.Latency)
	// A connection the broker cut (a slow consumer, when the test shares
	// the CPU with the broker) loses the replies in flight: those requests
	// have no known outcome, and nothing else may go wrong.
	for e := range rep.Errors {
		if len(rep.BrokerCuts) == 0 || !strings.HasSuffix(e, ": transport") {
			t.Fatalf("errors %v %q (broker cuts %v)", rep.Errors, rep.ErrorExamples, rep.BrokerCuts)
		}
	}
	if !c.OK() {
		t.Fatalf("incomplete: %+v", c)
	}
	if c.ExpectedLive == 0 || c.ExpectedPast == 0 || rep.Notifications < c.ExpectedLive || rep.Latency.N == 0 {
		t.Fatalf("a run that proves nothing: %+v, %d notifications", c, rep.Notifications)
	}
	lost := 0
	for _, n := range rep.Errors {
		lost += n
	}
	if rep.Subscribes+rep.Publishes+lost != rep.Ops {
		t.Fatalf("%d subscribes and %d publishes answered of %d", rep.Subscribes, rep.Publishes, rep.Ops)
	}
}

// TestOpenLoopWithDroppedConnections publishes over NATS on the schedule
// while subscriber connections are cut and resumed: nothing may be lost.
func TestOpenLoopWithDroppedConnections(t *testing.T) {
	b := startBroker(t)
	rep, err := Run(context.Background(), Config{WSURLs: []string{"ws://" + b.HTTPAddr() + "/ws"}, NATSURL: b.NATSURL(),
		MetricsURL: "http://" + b.HTTPAddr() + "/metrics", Ops: smallWorkload(t, 1, 6000), Conns: 4, DropEvery: 200 * time.Millisecond, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	check(t, rep)
	if rep.Drops < 5 || rep.Resumes == 0 {
		t.Fatalf("%d drops, %d resumes: the cuts did not happen", rep.Drops, rep.Resumes)
	}
	if rep.Broker == nil || rep.Broker.RSSMiB <= 0 || len(rep.Broker.LSM) == 0 {
		t.Fatalf("nothing scraped from /metrics: %+v", rep.Broker)
	}
}

// TestClosedLoopOverWebSocket runs flat out with publishers on WebSocket.
func TestClosedLoopOverWebSocket(t *testing.T) {
	b := startBroker(t)
	rep, err := Run(context.Background(), Config{WSURLs: []string{"ws://" + b.HTTPAddr() + "/ws"}, Ops: smallWorkload(t, 2, 4000), Closed: true, Conns: 3, PubConns: 2, Window: 16})
	if err != nil {
		t.Fatal(err)
	}
	check(t, rep)
}

// TestClosedLoopInStep keeps the connections within a few operations of
// each other, below what their windows would take: a slot not given back
// after a reply would stall the run until its deadline.
func TestClosedLoopInStep(t *testing.T) {
	b := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{WSURLs: []string{"ws://" + b.HTTPAddr() + "/ws"}, NATSURL: b.NATSURL(), Ops: smallWorkload(t, 3, 3000),
		Closed: true, Conns: 3, PubConns: 2, Window: 16, Ahead: 5})
	if err != nil {
		t.Fatal(err)
	}
	check(t, rep)
	if rep.Notifications == 0 {
		t.Fatal("no notifications")
	}
}

// TestCompletenessCatchesLoss feeds the report a hand-made run: one
// subscription, three publications in its cell and one elsewhere; one
// notification is missing, one arrives twice, one that was never due
// arrives, and the past result is missing. Then the complete run, and
// notifications of publications that failed: allowed when the outcome is
// unknown, unexpected when the publication was refused.
func TestCompletenessCatchesLoss(t *testing.T) {
	cellID := dewey.MustParse("1.2")
	sub := &workload.Op{Kind: workload.Subscribe, Uid: "u", Cell: cellID, Past: time.Second, Future: time.Minute}
	pub := &workload.Op{Kind: workload.Publish, Uid: "p", Cell: cellID, Expires: time.Minute}
	elsewhere := &workload.Op{Kind: workload.Publish, Uid: "p", Cell: dewey.MustParse("1.3"), Expires: time.Minute}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	const n = 7
	r := &run{cfg: Config{Ops: make([]workload.Op, n), SpoolDir: t.TempDir()}, errs: map[string]int{}, cuts: map[string]int{}, replyLat: newHisto()}
	r.subs = make([]subRec, n)
	r.pubs = make([]pubRec, n)
	r.pubs[0] = pubRec{op: pub, tp: base, ok: true} // before the subscription: a past result
	r.subs[1] = subRec{op: sub, sid: "s", ts: base + 10, ok: true}
	r.pubs[2] = pubRec{op: pub, tp: base + 20, ok: true}
	r.pubs[3] = pubRec{op: pub, tp: base + 30, ok: true}
	r.pubs[4] = pubRec{op: elsewhere, tp: base + 40, ok: true}
	r.pubs[5] = pubRec{op: pub, unknown: true} // its shard was lost: stored or not
	r.pubs[6] = pubRec{op: pub}                // refused: never stored
	report := func(past []int64, notes ...int64) Completeness {
		t.Helper()
		spools := make([]*spool, 2)
		for i := range spools {
			s, err := newSpool(r.cfg.SpoolDir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.remove() })
			spools[i] = s
		}
		for _, p := range past {
			spools[0].add(rec{sub: 1, pub: p})
		}
		for _, p := range notes {
			spools[1].add(rec{sub: 1, pub: p, at: base + 50})
		}
		rep, err := r.report(time.Second, spools)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Completeness
	}
	c := report(nil, 2, 2, 4)
	// Missing: the past result and the live 3.
	if c.ExpectedLive != 2 || c.ExpectedPast != 1 || c.Mismatched != 1 || c.Missing != 2 || c.Duplicates != 1 || c.Unexpected != 1 || len(c.Examples) != 4 || c.OK() {
		t.Fatalf("%+v", c)
	}
	// One missing and one twice: the count is right, the pairs are not.
	if c := report([]int64{0}, 2, 2); c.Mismatched != 1 || c.Missing != 1 || c.Duplicates != 1 || c.Unexpected != 0 || c.OK() {
		t.Fatalf("%+v", c)
	}
	if c := report([]int64{0}, 3, 2); !c.OK() || c.Missing+c.Duplicates+c.Unexpected+c.Mismatched != 0 {
		t.Fatalf("the complete run: %+v", c)
	}
	if c := report([]int64{0, 5}, 3, 5, 2); !c.OK() || c.FromUnanswered != 2 {
		t.Fatalf("with an unanswered publication's past result and notification: %+v", c)
	}
	if c := report([]int64{0}, 3, 2, 6); c.OK() || c.Unexpected != 1 {
		t.Fatalf("a refused publication's notification passed: %+v", c)
	}
	if c := report([]int64{0}, 3, 2, -1); c.OK() || c.Unexpected != 1 {
		t.Fatalf("a publication of no operation passed: %+v", c)
	}
}

// TestGaps: the longest stretch without a successful reply, per shard,
// counted from the start.
func TestGaps(t *testing.T) {
	var g gaps
	t0 := time.Now()
	g.start(t0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	g.ok("g3", at(10))
	g.ok("g5", at(20))
	g.ok("g3", at(2510)) // 2.5 s after its last
	g.ok("g5", at(100))
	g.ok("g0", at(40)) // from the start
	got := g.longest(2)
	if len(got) != 2 || got[0] != (Gap{Shard: "g3", Ms: 2500, EndS: 2.51}) || got[1] != (Gap{Shard: "g5", Ms: 80, EndS: 0.1}) {
		t.Fatalf("%+v", got)
	}
}

// With Shard, what arrives is counted by the shard of the subscription it
// came for, and adds up to the run's totals; gaps are named by shard.
func TestDeliveredByShard(t *testing.T) {
	b := startBroker(t)
	ops := smallWorkload(t, 4, 2000)
	// Two shards by the subtree at S2 level 6, the shallowest level of the
	// workload, as a cluster's layout hashes subtrees: overlapping cells
	// share it.
	shard := func(cell dewey.ID) string { return fmt.Sprintf("s%d", cell[6]%2) }
	rep, err := Run(context.Background(), Config{WSURLs: []string{"ws://" + b.HTTPAddr() + "/ws"}, Ops: ops, Closed: true, Conns: 3, PubConns: 2,
		Window: 16, Shard: shard})
	if err != nil {
		t.Fatal(err)
	}
	check(t, rep)
	var notes, past int64
	for name, d := range rep.Shards {
		if name != "s0" && name != "s1" {
			t.Fatalf("shard %q", name)
		}
		notes += d.Notifications
		past += d.PastResults
	}
	if len(rep.Shards) != 2 || notes != int64(rep.Notifications) || past != int64(rep.PastResults) {
		t.Fatalf("by shard %+v: %d notifications and %d past results, want %d and %d in two shards", rep.Shards, notes, past, rep.Notifications, rep.PastResults)
	}
	for _, gp := range rep.LongestGaps {
		if gp.Shard != "s0" && gp.Shard != "s1" {
			t.Fatalf("gap %+v not named by shard", gp)
		}
	}
}

// pubOf finds the operation a description names after the run's mark,
// whatever the workload's own text holds.
func TestPubOf(t *testing.T) {
	r := &run{mark: " #abc.", pubs: make([]pubRec, 10)}
	for desc, want := range map[string]int64{
		"fire #abc.7": 7, "a.b. #abc.0": 0, "x #abc.9": 9, " #abc. #abc.3": 3,
		"fire #abd.7": -1, "fire #abc.10": -1, "fire #abc.": -1, "fire #abc.-1": -1, "fire 7": -1, "": -1, "#abc.7": -1,
	} {
		if got := r.pubOf(desc); got != want {
			t.Errorf("pubOf(%q) = %d, want %d", desc, got, want)
		}
	}
}

// routed picks, for every broker, only connections dialled to it, and
// every one of them for some user.
func TestRouted(t *testing.T) {
	for brokers := 1; brokers <= 4; brokers++ {
		for n := brokers; n <= 11; n++ {
			for b := range brokers {
				seen := map[int]bool{}
				for k := range 50 {
					i := routed(b, k, brokers, n)
					if i < 0 || i >= n || i%brokers != b {
						t.Fatalf("routed(%d, %d, %d, %d) = %d: not a connection to broker %d", b, k, brokers, n, i, b)
					}
					seen[i] = true
				}
				if want := (n - b + brokers - 1) / brokers; len(seen) != want {
					t.Fatalf("broker %d of %d, %d connections: %d used, want %d", b, brokers, n, len(seen), want)
				}
			}
		}
	}
}

// With Route, operations go to the connections of the broker it names
// (here two names of one broker), and completeness holds as before.
func TestRouteKeepsCompleteness(t *testing.T) {
	b := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url := "ws://" + b.HTTPAddr() + "/ws"
	var calls atomic.Int64
	// New York lies on one face: split it below, at S2 level 6.
	route := func(cell dewey.ID) int { calls.Add(1); return int(cell[6] % 2) }
	rep, err := Run(ctx, Config{WSURLs: []string{url, url}, Ops: smallWorkload(t, 3, 2000), Closed: true, Conns: 4, PubConns: 2, Window: 8,
		Route: route})
	if err != nil {
		t.Fatal(err)
	}
	check(t, rep)
	if calls.Load() != 2000 {
		t.Fatalf("Route asked %d times for 2,000 operations", calls.Load())
	}
	if _, err := Run(ctx, Config{WSURLs: []string{url, url}, NATSURL: b.NATSURL(), Ops: smallWorkload(t, 3, 10), Route: route}); err == nil {
		t.Fatal("Route with NATS publishers was accepted")
	}
}

// A connection takes a task only once its window has room: the task stays
// shared (and unstamped) while every place is in flight.
func TestATaskWaitsForRoomInTheWindow(t *testing.T) {
	c := &wsConn{r: &run{}, tasks: make(chan task, 4), window: make(chan struct{}, 1)}
	c.window <- struct{}{} // a request in flight fills the window
	c.tasks <- task{index: 7}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // serve skips what it takes: no broker needed
	done := make(chan struct{})
	go c.serve(ctx, func() { close(done) })
	time.Sleep(50 * time.Millisecond)
	if len(c.tasks) != 1 {
		t.Fatal("a task was taken while the window was full")
	}
	<-c.window // its reply came
	close(c.tasks)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not end")
	}
	if len(c.tasks) != 0 || len(c.window) != 0 {
		t.Fatalf("%d tasks left, %d places held, want none", len(c.tasks), len(c.window))
	}
}
