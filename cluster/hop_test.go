package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed84792017/cellcast/subscriptions"
)

// remoteCell finds a cell whose shard another node than holder owns, and
// that node.
func remoteCell(t *testing.T, nodes []*testNode, holder *testNode) (subscriptions.Cell, *testNode) {
	t.Helper()
	for _, o := range nodes {
		if o == holder {
			continue
		}
		for _, sh := range o.Owned() {
			if !IsTopic(sh) && sh != Overflow {
				return cellIn(o.cfg.Shards, sh), o
			}
		}
	}
	t.Fatal("no other node owns a geo shard")
	return subscriptions.Cell{}, nil
}

// subscribeAcross starts three nodes and subscribes on one of them (the
// holder) to a cell whose shard another (the owner) serves, for future.
func subscribeAcross(t *testing.T, future time.Duration) (holder, owner *testNode, cell subscriptions.Cell, k *sink, sid string) {
	t.Helper()
	nodes := startNodes(t, natsCluster(t, 3), 2)
	waitSteady(t, nodes)
	holder, k = nodes[0], newSink()
	cell, owner = remoteCell(t, nodes, holder)
	err := holder.Subscribe(context.Background(), &subscriptions.SubscribeRequest{Uid: "s", Cell: cell, Future: future}, k,
		func(_ *subscriptions.SubscribeResult, s string) { sid = s })
	if err != nil {
		t.Fatal(err)
	}
	return holder, owner, cell, k, sid
}

// intrude appends to the log of cell's shard as another writer would (a
// new owner): its owner's next append names a last sequence the stream
// has passed, and is fenced off.
func intrude(t *testing.T, owner *testNode, cell subscriptions.Cell) {
	t.Helper()
	js, err := jetstream.New(owner.nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	shard := owner.cfg.Shards.Home([]subscriptions.Cell{cell})
	if _, err := js.Publish(ctx, logSubject+shard, appendEntry(nil, entryOwner, []byte("intruder"))); err != nil {
		t.Fatal(err)
	}
}

// lossy makes the owner's batches to holder go through fate, which says
// for the k-th send (from 1) whether it is lost on the way (nil error,
// nothing sent) or refused (an error).
func lossy(owner, holder *testNode, fate func(k int) (lost bool, err error)) {
	b := owner.outbox(holder.cfg.ID).(*outbox)
	b.mu.Lock()
	defer b.mu.Unlock()
	send, k := b.publish, 0
	b.publish = func(subject string, data []byte) error {
		k++
		if lost, err := fate(k); lost || err != nil {
			return err
		}
		return send(subject, data)
	}
}

func publishAll(t *testing.T, via *testNode, cell subscriptions.Cell, from, to int) []string {
	t.Helper()
	var want []string
	for i := from; i < to; i++ {
		desc := fmt.Sprint("pub ", i)
		err := via.Publish(context.Background(), &subscriptions.PublishRequest{Uid: "p", Cell: cell, Desc: desc, Expires: time.Hour}, func(*subscriptions.PublishResult) {})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, desc)
		time.Sleep(5 * time.Millisecond) // a batch or so each
	}
	return want
}

// TestHopRepairsLostBatches: batches from a shard's owner to the node
// holding a subscription are lost on the way or refused by NATS; the
// subscriber still gets every notification once, in order, with an
// unbroken Prev chain. The holder sees each loss in the next
// notification's Prev and resumes from what it has; the owner keeps a
// refused batch and sends it again, before anything after it.
func TestHopRepairsLostBatches(t *testing.T) {
	holder, owner, cell, k, sid := subscribeAcross(t, time.Hour)
	lossy(owner, holder, func(k int) (bool, error) {
		switch k {
		case 3, 6, 7:
			return true, nil // lost
		case 9, 10:
			return false, errors.New("nats: refused")
		}
		return false, nil
	})
	want := publishAll(t, owner, cell, 0, 40)
	waitGot(t, k, sid, want)
	k.mu.Lock()
	broken := k.broken[sid]
	k.mu.Unlock()
	if broken != 0 {
		t.Fatalf("%d notifications broke the Prev chain the subscriber sees", broken)
	}
	if g, f := holder.Stats().Gaps, owner.Stats().FlushErrors; g == 0 || f == 0 {
		t.Fatalf("gaps repaired %d, batches refused %d: the losses did not happen", g, f)
	}
}

// TestHopResendsRefusedBatches: while NATS refuses the owner's batches
// (a connection past its reconnect buffer), the owner keeps them and
// sends them again in order: the holder needs no repair.
func TestHopResendsRefusedBatches(t *testing.T) {
	holder, owner, cell, k, sid := subscribeAcross(t, time.Hour)
	lossy(owner, holder, func(k int) (bool, error) {
		if k >= 2 && k <= 8 {
			return false, errors.New("nats: refused")
		}
		return false, nil
	})
	want := publishAll(t, owner, cell, 0, 20)
	waitGot(t, k, sid, want)
	if g, f := holder.Stats().Gaps, owner.Stats().FlushErrors; g != 0 || f == 0 {
		t.Fatalf("gaps repaired %d, batches refused %d: want none repaired, some refused", g, f)
	}
}

// TestHopRepairsATrailingLoss: the batch holding a subscription's last
// notifications is lost, and nothing follows it until the window ends;
// the owner's end names its last sequence number, and the holder, which
// has less, resumes before ending the route.
func TestHopRepairsATrailingLoss(t *testing.T) {
	holder, owner, cell, k, sid := subscribeAcross(t, 3*time.Second)
	want := publishAll(t, owner, cell, 0, 5)
	waitGot(t, k, sid, want)
	var mu sync.Mutex
	dropping := true
	lossy(owner, holder, func(int) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return dropping, nil
	})
	want = append(want, publishAll(t, owner, cell, 5, 8)...)
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	dropping = false // what the owner sends from here on arrives
	mu.Unlock()
	deadline := time.Now().Add(15 * time.Second)
	for {
		k.mu.Lock()
		got, ended := slices.Clone(k.got[sid]), k.ended[sid]
		k.mu.Unlock()
		if ended != "" {
			if !slices.Equal(got, want) {
				t.Fatalf("ended (%s) with %q, want %q", ended, got, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no end; got %q", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestFencedAppendNotifiesNobody: a publication the owner staged is in
// the batch whose log append is fenced off (another writer took the
// stream): the publisher is told unavailable and no subscriber hears of
// it; once the shard is served again a retry reaches the subscriber
// once.
func TestFencedAppendNotifiesNobody(t *testing.T) {
	holder, owner, cell, k, sid := subscribeAcross(t, time.Hour)
	want := publishAll(t, owner, cell, 0, 3)
	waitGot(t, k, sid, want)
	intrude(t, owner, cell)
	err := owner.Publish(context.Background(), &subscriptions.PublishRequest{Uid: "p", Cell: cell, Desc: "fenced", Expires: time.Hour}, func(*subscriptions.PublishResult) {})
	if err == nil {
		t.Fatal("a publication whose append was fenced off was acknowledged")
	}
	// The publisher retries until the shard is served again.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		err := holder.Publish(context.Background(), &subscriptions.PublishRequest{Uid: "p", Cell: cell, Desc: "retried", Expires: time.Hour}, func(*subscriptions.PublishResult) {})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shard was not served again: %v", err)
		}
	}
	waitGot(t, k, sid, append(want, "retried"))
}
