package gateway

import (
	"context"
	"encoding/json"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/subscriptions"
)

func natsServer(t testing.TB, port int) *server.Server {
	t.Helper()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	return ns
}

// TestNATSSinkCatchesUpAfterAnOutage: notifications the broker's NATS
// connection refuses while the server is down (no reconnect buffer) make
// the subscription lag; once the connection is back, the sink replays
// them from the store. The subscriber gets every publication once, in
// order. The oracle is the list of pids published.
func TestNATSSinkCatchesUpAfterAnOutage(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ns := natsServer(t, port)
	url := ns.ClientURL()

	svc, loc := newTestService(t)
	g := New(Config{Service: svc, Locator: loc})
	// The broker's side reconnects slowly, the subscriber's at once, so
	// the subscriber listens again before the catch-up replays.
	bnc, err := nats.Connect(url, nats.ReconnectBufSize(-1), nats.MaxReconnects(-1),
		nats.CustomReconnectDelay(func(int) time.Duration { return time.Second }))
	if err != nil {
		t.Fatal(err)
	}
	defer bnc.Close()
	stop, err := g.ServeNATS(bnc)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	cnc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cnc.Close()
	notes, err := cnc.SubscribeSync(SubjectNotify + ".alice")
	if err != nil {
		t.Fatal(err)
	}
	reply, err := cnc.Request(SubjectPrefix+"subscribe", []byte(`{"uid":"alice","cell":"1","future":"1h"}`), 10*time.Second)
	if err != nil || !json.Valid(reply.Data) {
		t.Fatalf("subscribe: %v", err)
	}
	var pids, got []string
	var last int64
	// next reads one notification, in order, with a seq above the last.
	next := func() {
		t.Helper()
		m, err := notes.NextMsg(20 * time.Second)
		if err != nil {
			t.Fatalf("after %d of %d notifications: %v\ngot  %v\nwant %v", len(got), len(pids), err, got, pids)
		}
		var n struct {
			Seq int64 `json:"seq"`
			Pub struct {
				Pid string `json:"pid"`
			} `json:"publication"`
		}
		if err := json.Unmarshal(m.Data, &n); err != nil {
			t.Fatal(err)
		}
		if n.Seq <= last {
			t.Fatalf("seq %d after %d", n.Seq, last)
		}
		last = n.Seq
		got = append(got, n.Pub.Pid)
	}
	publish := func() {
		err := svc.Publish(context.Background(), &subscriptions.PublishRequest{Uid: "bob", Cell: subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.MustParse("1.2")}, Expires: time.Hour},
			func(res *subscriptions.PublishResult) { pids = append(pids, res.Pub.Pid()) })
		if err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		publish()
	}
	svc.Drain()
	// Those go out before the outage: NATS core itself loses what it
	// holds for a subscriber when the server stops (the lossless NATS
	// delivery is another matter), so they are read first.
	for range 5 {
		next()
	}
	ns.Shutdown()
	ns.WaitForShutdown()
	for bnc.IsConnected() {
		time.Sleep(5 * time.Millisecond)
	}
	for range 10 {
		publish()
	}
	svc.Drain()
	if st := svc.Stats(); st.Refused == 0 || st.Lagging != 1 {
		t.Fatalf("stats %+v: want refused notifications and one lagging subscription while NATS is down", st)
	}
	ns = natsServer(t, port)
	defer ns.Shutdown()
	for len(got) < len(pids) {
		next()
	}
	if !slices.Equal(got, pids) {
		t.Fatalf("got %v\nwant %v", got, pids)
	}
	// The hub counts a catch-up once its replay is sent, so the count may
	// trail the last notification read.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		st := svc.Stats()
		if st.CatchUps > 0 && st.Lagging == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v: want a catch-up and nothing lagging", st)
		}
	}
	if m, err := notes.NextMsg(200 * time.Millisecond); err == nil {
		t.Fatalf("an extra notification: %s", m.Data)
	}
}
