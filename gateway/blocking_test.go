package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/delivery"
	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/service"
	"github.com/seed84792017/cellcast/subscriptions"
)

// blockedNATS serves a gateway on NATS whose sink's publishes wait for
// release to close, and subscribes a client to alice's notifications.
func blockedNATS(t *testing.T) (*service.Service, chan struct{}, *natsClient) {
	t.Helper()
	ns := natsServer(t, -1)
	t.Cleanup(ns.Shutdown)
	svc, loc := newTestService(t)
	g := New(Config{Service: svc, Locator: loc})
	bnc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bnc.Close)
	stop, err := g.ServeNATS(bnc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop() })
	release := make(chan struct{})
	k := g.nats
	k.mu.Lock()
	send := k.publish
	k.publish = func(subject string, data []byte) error {
		<-release
		return send(subject, data)
	}
	k.mu.Unlock()
	cnc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cnc.Close)
	notes, err := cnc.SubscribeSync(SubjectNotify + ".alice")
	if err != nil {
		t.Fatal(err)
	}
	return svc, release, &natsClient{nc: cnc, notes: notes}
}

// natsClient asks the gateway on NATS and reads alice's notifications.
type natsClient struct {
	nc    *nats.Conn
	notes *nats.Subscription
}

func (c *natsClient) request(op, body string) (map[string]any, error) {
	m, err := c.nc.Request(SubjectPrefix+op, []byte(body), 10*time.Second)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(m.Data, &out)
}

func (c *natsClient) NextMsg(d time.Duration) (*nats.Msg, error) { return c.notes.NextMsg(d) }

// TestBlockedNATSSinkStallsNothing: while the NATS sink's publishes are
// held up (a slow socket), a publication it must carry is dispatched, and
// other clients' subscribes and unsubscribes are still answered: the hub
// hands the sink its notification under its route lock, and the sink only
// queues it. Released, the NATS subscriber gets it.
func TestBlockedNATSSinkStallsNothing(t *testing.T) {
	svc, release, notes := blockedNATS(t)
	if _, err := notes.request("subscribe", `{"uid":"alice","cell":"1","future":"1h"}`); err != nil {
		t.Fatal(err)
	}
	cell := func(s string) subscriptions.Cell {
		return subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.MustParse(s)}
	}
	if err := svc.Publish(context.Background(), &subscriptions.PublishRequest{Uid: "bob", Cell: cell("1.2"), Expires: time.Hour}, func(*subscriptions.PublishResult) {}); err != nil {
		t.Fatal(err)
	}
	drained := make(chan struct{})
	go func() { svc.Drain(); close(drained) }()
	select { // dispatched: the sink holds it
	case <-drained:
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("the dispatcher waited on the blocked NATS sink")
	}
	// Others are served meanwhile.
	done := make(chan error, 1)
	go func() {
		for i := range 20 {
			var sid string
			err := svc.Subscribe(context.Background(), &subscriptions.SubscribeRequest{Uid: "carol", Cell: cell("2.1"), Future: time.Hour}, newTestSink(),
				func(_ *subscriptions.SubscribeResult, s string) { sid = s })
			if err == nil {
				err = svc.Unsubscribe(context.Background(), sid, "carol", nil)
			}
			if err != nil {
				done <- err
				return
			}
			if i%5 == 0 {
				err = svc.Publish(context.Background(), &subscriptions.PublishRequest{Uid: "bob", Cell: cell("1.3"), Expires: time.Hour}, func(*subscriptions.PublishResult) {})
				if err != nil {
					done <- err
					return
				}
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("subscribes and unsubscribes waited on the blocked NATS sink")
	}
	close(release)
	m, err := notes.NextMsg(10 * time.Second)
	if err != nil || !json.Valid(m.Data) {
		t.Fatalf("the held notification: %v", err)
	}
}

// TestNATSEndFollowsItsNotifications: a subscription cancelled while the
// NATS sink's publishes are held up ends on the user's subject after the
// notifications queued before the cancel, never before them.
func TestNATSEndFollowsItsNotifications(t *testing.T) {
	svc, release, c := blockedNATS(t)
	rep, err := c.request("subscribe", `{"uid":"alice","cell":"1","future":"1h"}`)
	if err != nil {
		t.Fatal(err)
	}
	sid, _ := rep["sid"].(string)
	for range 3 {
		if _, err := c.request("publish", `{"uid":"bob","cell":"1.2","expires":"1h"}`); err != nil {
			t.Fatal(err)
		}
	}
	if rep, err := c.request("unsubscribe", `{"uid":"alice","sid":"`+sid+`"}`); err != nil || rep["op"] != "unsubscribed" {
		t.Fatalf("unsubscribe: %v %v", rep, err)
	}
	svc.Drain()
	// The route is gone once its end was handed to the sink (the sweep
	// runs every second).
	for deadline := time.Now().Add(10 * time.Second); svc.Stats().Routes != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the cancelled subscription's route stayed")
		}
	}
	close(release)
	var ops []any
	for len(ops) < 4 {
		m, err := c.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("after %v: %v", ops, err)
		}
		var f map[string]any
		if err := json.Unmarshal(m.Data, &f); err != nil {
			t.Fatal(err)
		}
		ops = append(ops, f["op"])
	}
	if want := []any{"notification", "notification", "notification", "ended"}; !slices.Equal(ops, want) {
		t.Fatalf("alice got %v, want %v", ops, want)
	}
}

// testSink takes every notification and keeps none.
type testSink struct{}

func newTestSink() testSink                         { return testSink{} }
func (testSink) Notify(*delivery.Notification) bool { return true }
func (testSink) Ended(delivery.End)                 {}
