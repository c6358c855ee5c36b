package cluster

import (
	"context"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/subscriptions"
)

// TestSelfJoinAcrossShards: users move over cells whose subtrees live in
// different shards, subscribing with self-join or without. A self-join's
// past results leave out exactly what one node's would: the publications
// owed to the user's earlier self-joins wherever they lie, and to the
// user's earlier plain subscriptions on cells overlapping its own, which
// live in their subtrees' shards while self-joins live in g0. Its live
// notifications are every later overlapping publication, once. Any node
// then finds each subscription by its sid, to resume and to cancel it.
func TestSelfJoinAcrossShards(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three clustered nats-servers")
	}
	servers := natsCluster(t, 3)
	nodes := startNodes(t, servers, 2)
	layout := Shards{Depth: 2}
	r := rand.New(rand.NewSource(21))
	ctx := context.Background()
	sinks := []*sink{newSink(), newSink(), newSink()}
	type pub struct {
		desc string
		cell subscriptions.Cell
	}
	var pubs []pub
	var subs []*testSub
	wantPast := map[*testSub]map[string]bool{}
	wantLive := map[*testSub]map[string]bool{}
	crossShard := 0     // past results left out for a self-join of another subtree's shard
	plainElsewhere := 0 // left out for a plain subscription outside g0
	for range 240 {
		k := r.Intn(len(nodes))
		c := randomCell(r)
		if r.Intn(3) > 0 {
			desc := fmt.Sprintf("p%d", len(pubs))
			if err := nodes[k].Publish(ctx, &subscriptions.PublishRequest{Uid: "pub", Cell: c, Expires: time.Hour, Desc: desc},
				func(*subscriptions.PublishResult) {}); err != nil {
				t.Fatalf("publish at node %d on %v: %v", k, c, err)
			}
			pubs = append(pubs, pub{desc, c})
			for _, s := range subs {
				if overlaps(c, s.cell) {
					wantLive[s][desc] = true
				}
			}
			continue
		}
		s := &testSub{uid: fmt.Sprintf("u%d", r.Intn(4)), cell: c, node: k, sink: sinks[k], selfJoin: r.Intn(2) == 0}
		want := map[string]bool{}
		for _, p := range pubs {
			if !overlaps(p.cell, c) {
				continue
			}
			// One node's rule: an earlier self-join anywhere, or an
			// earlier plain subscription on a cell overlapping c.
			seen, elsewhere, plain := false, true, false
			for _, o := range subs {
				if o.uid != s.uid || !overlaps(p.cell, o.cell) || !o.selfJoin && !overlaps(o.cell, c) {
					continue
				}
				seen = true
				if o.selfJoin {
					elsewhere = elsewhere && layout.Home([]subscriptions.Cell{o.cell}) != layout.Home([]subscriptions.Cell{c})
				} else {
					plain = plain || layout.Home([]subscriptions.Cell{o.cell}) != Overflow
				}
			}
			switch {
			case !seen || !s.selfJoin:
				want[p.desc] = true
			case plain:
				plainElsewhere++
			case elsewhere:
				crossShard++
			}
		}
		err := nodes[k].Subscribe(ctx, &subscriptions.SubscribeRequest{Uid: s.uid, Cell: c, Past: time.Hour, Future: time.Hour, SelfJoin: s.selfJoin},
			sinks[k], func(res *subscriptions.SubscribeResult, sid string) {
				s.sid = sid
				for _, p := range res.Past {
					s.past = append(s.past, p.Desc)
				}
				for _, b := range res.Rendered {
					s.past = append(s.past, string(b))
				}
			})
		if err != nil {
			t.Fatalf("subscribe at node %d on %v: %v", k, c, err)
		}
		subs = append(subs, s)
		wantPast[s], wantLive[s] = want, map[string]bool{}
	}
	if crossShard == 0 || plainElsewhere == 0 {
		t.Fatalf("past results left out for a self-join in another shard: %d, for a plain subscription outside g0: %d; the workload tests too little", crossShard, plainElsewhere)
	}
	for _, s := range subs {
		if got := slices.Sorted(slices.Values(s.past)); !slices.Equal(got, slices.Sorted(maps.Keys(wantPast[s]))) {
			t.Fatalf("subscription %s (self-join %v) of %s at %v: past %v, want %v", s.sid, s.selfJoin, s.uid, s.cell, got, slices.Sorted(maps.Keys(wantPast[s])))
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, s := range subs {
		for {
			s.sink.mu.Lock()
			got := slices.Sorted(slices.Values(s.sink.got[s.sid]))
			s.sink.mu.Unlock()
			want := slices.Sorted(maps.Keys(wantLive[s]))
			if slices.Equal(got, want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("subscription %s at %v: notified of %v, want %v", s.sid, s.cell, got, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for i, s := range subs {
		to := (s.node + 1 + i%2) % len(nodes)
		s.sink.mu.Lock()
		last := s.sink.last[s.sid]
		s.sink.mu.Unlock()
		if err := nodes[to].Resume(ctx, s.sid, last, s.uid, sinks[to], func(*subscriptions.ReplayResult) {}); err != nil {
			t.Fatalf("resume of %s at node %d: %v", s.sid, to, err)
		}
		if err := nodes[(to+1)%len(nodes)].Unsubscribe(ctx, s.sid, s.uid, nil); err != nil {
			t.Fatalf("unsubscribe of %s: %v", s.sid, err)
		}
	}
}
