package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/subscriptions"
)

// A sink going away with many subscriptions tells each shard's owner in
// one message, and every owner stops routing all of them; publications
// after that send the holder nothing.
func TestDetachTellsEachShardOnce(t *testing.T) {
	nodes := startNodes(t, natsCluster(t, 3), 2)
	waitSteady(t, nodes)
	holder := nodes[0]
	ctx := context.Background()
	k := newSink()
	var sids []string
	var cells []subscriptions.Cell
	for a := uint32(1); a <= 4; a++ {
		for b := uint32(1); b <= 4; b++ {
			for c := uint32(1); c <= 3; c++ {
				cell := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{a, b, c}}
				err := holder.Subscribe(ctx, &subscriptions.SubscribeRequest{Uid: fmt.Sprint("u", len(sids)), Cell: cell, Future: time.Hour}, k,
					func(_ *subscriptions.SubscribeResult, sid string) { sids = append(sids, sid) })
				if err != nil {
					t.Fatal(err)
				}
				cells = append(cells, cell)
			}
		}
	}
	remote := map[string]bool{} // shards of the subscriptions that holder does not own
	for _, cell := range cells {
		if shard := holder.cfg.Shards.Home([]subscriptions.Cell{cell}); !slices.Contains(holder.Owned(), shard) {
			remote[shard] = true
		}
	}
	if len(remote) == 0 {
		t.Fatal("the holder owns every shard: nothing crosses nodes")
	}
	before := holder.Stats().Requests
	holder.Detach(sids, k)
	if sent := holder.Stats().Requests - before; sent != uint64(len(remote)) {
		t.Fatalf("detaching %d subscriptions in %d other nodes' shards sent %d requests, want one a shard", len(sids), len(remote), sent)
	}
	deadline := time.Now().Add(10 * time.Second)
	for left := routedTo(nodes, holder.cfg.ID); len(left) > 0; left = routedTo(nodes, holder.cfg.ID) {
		if time.Now().After(deadline) {
			t.Fatalf("owners still route %d of %d subscriptions to the holder: %v", len(left), len(sids), left)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i, cell := range cells {
		err := nodes[1].Publish(ctx, &subscriptions.PublishRequest{Uid: "p", Cell: cell, Expires: time.Hour, Desc: fmt.Sprint("after ", i)},
			func(*subscriptions.PublishResult) {})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range nodes {
		n.Drain()
	}
	time.Sleep(200 * time.Millisecond) // batches on their way
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.got) > 0 {
		t.Fatalf("a detached sink got %v", k.got)
	}
}

// waitSteady waits until the nodes share each group of shards fairly and have
// kept them for a second: nodes that just started still hand shards on.
func waitSteady(t *testing.T, nodes []*testNode) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	last, since := "", time.Now()
	for {
		var view []string
		var owned [][]string
		for _, n := range nodes {
			o := sorted(n.Owned())
			view = append(view, strings.Join(o, ","))
			owned = append(owned, o)
		}
		now := strings.Join(view, " | ")
		if now != last || !nodes[0].cfg.Shards.Fair(owned) {
			last, since = now, time.Now()
		} else if time.Since(since) > time.Second {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("shards did not settle: %s", now)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// routedTo lists the subscriptions that the nodes' owners route to
// holder.
func routedTo(nodes []*testNode, holder string) []string {
	var out []string
	for _, n := range nodes {
		n.mu.Lock()
		owners := slices.Collect(maps.Values(n.owned))
		n.mu.Unlock()
		for _, o := range owners {
			o.mu.Lock()
			for key := range o.sinks {
				if strings.HasPrefix(key, holder+" ") {
					out = append(out, o.name+": "+key)
				}
			}
			o.mu.Unlock()
		}
	}
	return out
}
