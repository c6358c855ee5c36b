package cluster

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/subscriptions"
)

// TestEveryOverlappingPairMeetsInOneShard checks the sharding rule by
// brute force: a subscription lives in one shard, and every publication
// that overlaps it is stored there (Targets is a set, so once).
func TestEveryOverlappingPairMeetsInOneShard(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	cell := func() subscriptions.Cell {
		id := dewey.ID{}
		for range 1 + r.Intn(6) {
			id = append(id, uint32(1+r.Intn(6))) // also components above 4
		}
		return subscriptions.Cell{NS: subscriptions.NSCell, ID: id}
	}
	for depth := 1; depth <= 3; depth++ {
		m := Shards{Depth: depth}
		all := m.All()
		for range 20000 {
			p, s := cell(), cell()
			targets := m.Targets(p)
			if len(slices.Compact(slices.Sorted(slices.Values(targets)))) != len(targets) {
				t.Fatalf("depth %d: targets of %v repeat a shard: %v", depth, p, targets)
			}
			for _, x := range targets {
				if !slices.Contains(all, x) {
					t.Fatalf("depth %d: %v targets unknown shard %s", depth, p, x)
				}
			}
			if overlaps(p, s) && !slices.Contains(targets, m.Home(s)) {
				t.Fatalf("depth %d: publication %v misses subscription %v: home %s, targets %v", depth, p, s, m.Home(s), targets)
			}
		}
	}
	if got := (Shards{Depth: 2}).Home(subscriptions.Cell{NS: subscriptions.NSTopic, ID: dewey.ID{1}}); got != TopicShard {
		t.Fatalf("topic home %s", got)
	}
}
