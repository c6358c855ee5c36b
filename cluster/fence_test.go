package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed84792017/cellcast/service"
	"github.com/seed84792017/cellcast/subscriptions"
)

// TestFencedOwnerAnswersNoResume: another writer took a shard's log (as a
// new owner does), and its old owner has not written since. A resume at
// the old owner writes nothing, yet is not answered there: its route
// would hear nothing more. Once the shard is served again, the resume
// replays what the subscriber missed.
func TestFencedOwnerAnswersNoResume(t *testing.T) {
	nodes := startNodes(t, natsCluster(t, 3), 2)
	waitSteady(t, nodes)
	holder := nodes[0]
	cell, owner := remoteCell(t, nodes, holder)
	shard := owner.cfg.Shards.Home([]subscriptions.Cell{cell})
	var sid string
	err := holder.Subscribe(context.Background(), &subscriptions.SubscribeRequest{Uid: "s", Cell: cell, Future: time.Hour}, newSink(),
		func(_ *subscriptions.SubscribeResult, s string) { sid = s })
	if err != nil {
		t.Fatal(err)
	}
	want := publishAll(t, owner, cell, 0, 3)
	js, err := jetstream.New(owner.nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.Publish(ctx, logSubject+shard, appendEntry(nil, entryOwner, []byte("intruder"))); err != nil {
		t.Fatal(err)
	}
	k := newSink()
	err = owner.Resume(context.Background(), sid, 0, "s", k, func(*subscriptions.ReplayResult) {})
	if !errors.Is(err, service.ErrUnavailable) {
		t.Fatalf("a resume at an owner fenced off its log: %v, want unavailable", err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		err := owner.Resume(context.Background(), sid, 0, "s", k, func(*subscriptions.ReplayResult) {})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shard was not served again: %v", err)
		}
	}
	waitGot(t, k, sid, want)
}
