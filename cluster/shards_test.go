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
	// Topics: by the top-level topic, with every descendant.
	topic := func(ids ...uint32) subscriptions.Cell { return subscriptions.Cell{NS: subscriptions.NSTopic, ID: ids} }
	m := Shards{Depth: 2}
	for _, c := range []struct {
		cell subscriptions.Cell
		want string
	}{{topic(4), "t1"}, {topic(1), "t2"}, {topic(1, 9), "t2"}, {topic(7, 1, 1), "t4"}, {topic(4000000006), "t3"}} {
		if got := m.Home(c.cell); got != c.want || !slices.Equal(m.Targets(c.cell), []string{c.want}) {
			t.Fatalf("topic %v: home %s, targets %v; want %s alone", c.cell, got, m.Targets(c.cell), c.want)
		}
	}
	rng := rand.New(rand.NewSource(5))
	for range 1000 {
		d := make(dewey.ID, 1+rng.Intn(5))
		for i := range d {
			d[i] = rng.Uint32()
		}
		anc := topic(d[:1+rng.Intn(len(d))]...)
		if m.Home(anc) != m.Home(topic(d...)) || !slices.Contains(m.All(), m.Home(anc)) {
			t.Fatalf("topic %v and its ancestor %v: shards %s and %s", d, anc.ID, m.Home(topic(d...)), m.Home(anc))
		}
	}
}

// TestTopicPairsMeetInOneShard: at every topic depth, a topic publication
// is stored in the home of every subscription it can match, and a topic
// shallower than the depth reaches every topic shard.
func TestTopicPairsMeetInOneShard(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	topic := func() subscriptions.Cell {
		id := dewey.ID{}
		for range 1 + r.Intn(5) {
			id = append(id, uint32(1+r.Intn(3))) // few names: paths overlap often
		}
		return subscriptions.Cell{NS: subscriptions.NSTopic, ID: id}
	}
	for td := 1; td <= 4; td++ {
		m := Shards{Depth: 2, TopicDepth: td}
		all := m.All()
		spread := map[string]bool{}
		for range 20000 {
			p, s := topic(), topic()
			targets := m.Targets(p)
			if targets[0] != m.Home(p) || len(slices.Compact(slices.Sorted(slices.Values(targets)))) != len(targets) {
				t.Fatalf("topic depth %d: targets of %v: %v (home %s)", td, p.ID, targets, m.Home(p))
			}
			for _, x := range targets {
				if !IsTopic(x) || !slices.Contains(all, x) {
					t.Fatalf("topic depth %d: %v targets shard %s", td, p.ID, x)
				}
			}
			if len(p.ID) < td && len(targets) != TopicShards {
				t.Fatalf("topic depth %d: shallow topic %v reaches %v only", td, p.ID, targets)
			}
			if overlaps(p, s) && !slices.Contains(targets, m.Home(s)) {
				t.Fatalf("topic depth %d: publication %v misses subscription %v: home %s, targets %v", td, p.ID, s.ID, m.Home(s), targets)
			}
			if len(s.ID) >= td && s.ID[0] == 1 {
				spread[m.Home(s)] = true
			}
		}
		if td > 1 && len(spread) < 2 {
			t.Fatalf("topic depth %d: the subtopics of one top-level topic all live in %v", td, spread)
		}
	}
	if err := (Shards{Depth: 2, TopicDepth: 5}).Validate(); err == nil {
		t.Fatal("topic depth 5 accepted")
	}
}
