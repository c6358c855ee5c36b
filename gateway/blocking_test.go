package gateway

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/delivery"
	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/dualdb"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/service"
	"github.com/seed84792017/cellcast/subscriptions"
)

// TestBlockedNATSSinkStallsNothing: while the NATS sink's publishes are
// held up (a slow socket), a publication it must carry is dispatched, and
// other clients' subscribes and unsubscribes are still answered: the hub
// hands the sink its notification under its route lock, and the sink only
// queues it. Released, the NATS subscriber gets it.
func TestBlockedNATSSinkStallsNothing(t *testing.T) {
	ns := natsServer(t, -1)
	defer ns.Shutdown()
	store, err := dualdb.Open(filepath.Join(t.TempDir(), "db"), listdb.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	loc, _ := NewLocator(Grid{}, nil)
	svc := service.New(service.Config{Store: store, Encode: loc.EncodePublication})
	defer svc.Close()
	g := New(Config{Service: svc, Locator: loc})
	bnc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer bnc.Close()
	stop, err := g.ServeNATS(bnc)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
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
	defer cnc.Close()
	notes, err := cnc.SubscribeSync(SubjectNotify + ".alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cnc.Request(SubjectPrefix+"subscribe", []byte(`{"uid":"alice","cell":"1","future":"1h"}`), 10*time.Second); err != nil {
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
				err = svc.Unsubscribe(context.Background(), sid, "carol")
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

// testSink takes every notification and keeps none.
type testSink struct{}

func newTestSink() testSink                         { return testSink{} }
func (testSink) Notify(*delivery.Notification) bool { return true }
func (testSink) Lost(string)                        {}
