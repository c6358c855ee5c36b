package cluster

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/geo"
	"github.com/seed84792017/cellcast/subscriptions"
)

// TestEveryOverlappingPairMeetsInOneShard checks the sharding rule by
// brute force: a subscription lives in one shard, and every publication
// that overlaps it (some cell of each) is stored there (Targets is a set,
// so once); a self-join subscription likewise in its own home.
func TestEveryOverlappingPairMeetsInOneShard(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	// Cells near each other at every depth, also components above 4 (any
	// Dewey id is a cell), alone or as covers.
	cell := func() subscriptions.Cell {
		id := dewey.ID{uint32(1 + r.Intn(2))}
		for range r.Intn(8) {
			id = append(id, uint32(1+r.Intn(5)))
		}
		return subscriptions.Cell{NS: subscriptions.NSCell, ID: id}
	}
	cells := func() []subscriptions.Cell {
		cs := []subscriptions.Cell{cell()}
		for range r.Intn(4) {
			cs = append(cs, cell())
		}
		return cells1(cs)
	}
	for _, m := range []Shards{{Depth: 2, Groups: 3}, {Depth: 4, Groups: 16}, {Depth: 6, Groups: 5}} {
		all := m.All()
		homes := map[string]bool{}
		for range 20000 {
			p, s := cells(), cells()
			targets := m.Targets(p)
			if len(slices.Compact(slices.Sorted(slices.Values(targets)))) != len(targets) || targets[0] != m.PubHome(p) {
				t.Fatalf("%v: targets of %v: %v", m, p, targets)
			}
			for _, x := range append(targets, m.Home(s)) {
				if !slices.Contains(all, x) {
					t.Fatalf("%v: %v or %v in unknown shard %s", m, p, s, x)
				}
			}
			home := m.Home(s)
			homes[home] = true
			if anyOverlap(p, s) && !slices.Contains(targets, home) {
				t.Fatalf("%v: publication %v misses subscription %v: home %s, targets %v", m, p, s, home, targets)
			}
			if !slices.Contains(m.Candidates(s[0], "u"), home) || m.SubHome(s, "u", false) != home {
				t.Fatalf("%v: subscription %v lives in %s, not among the candidates of its first cell %v", m, s, home, m.Candidates(s[0], "u"))
			}
			selfJoinMeets(t, m, p, s, "u", anyOverlap(p, s))
		}
		if len(homes) < min(m.groups(), 3) {
			t.Fatalf("%v: subscriptions live in %v only", m, homes)
		}
	}
	// Topics: by the top-level topic, with every descendant.
	topic := func(ids ...uint32) subscriptions.Cell { return subscriptions.Cell{NS: subscriptions.NSTopic, ID: ids} }
	m := Shards{Depth: 2}
	home := func(c subscriptions.Cell) string { return m.Home([]subscriptions.Cell{c}) }
	for _, c := range []struct {
		cell subscriptions.Cell
		want string
	}{{topic(4), "t1"}, {topic(1), "t2"}, {topic(1, 9), "t2"}, {topic(7, 1, 1), "t4"}, {topic(4000000006), "t3"}} {
		if got := home(c.cell); got != c.want || !slices.Equal(m.Targets([]subscriptions.Cell{c.cell}), []string{c.want}) {
			t.Fatalf("topic %v: home %s, targets %v; want %s alone", c.cell, got, m.Targets([]subscriptions.Cell{c.cell}), c.want)
		}
	}
	rng := rand.New(rand.NewSource(5))
	for range 1000 {
		d := make(dewey.ID, 1+rng.Intn(5))
		for i := range d {
			d[i] = rng.Uint32()
		}
		anc := topic(d[:1+rng.Intn(len(d))]...)
		if home(anc) != home(topic(d...)) || !slices.Contains(m.All(), home(anc)) {
			t.Fatalf("topic %v and its ancestor %v: shards %s and %s", d, anc.ID, home(topic(d...)), home(anc))
		}
	}
}

// TestTopicPairsMeetInOneShard: at every topic depth and number of topic
// shards, a topic publication is stored in the home of every subscription
// it can match, and a topic shallower than the depth reaches every topic
// shard.
func TestTopicPairsMeetInOneShard(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	topic := func() subscriptions.Cell {
		id := dewey.ID{}
		for range 1 + r.Intn(5) {
			id = append(id, uint32(1+r.Intn(3))) // few names: paths overlap often
		}
		return subscriptions.Cell{NS: subscriptions.NSTopic, ID: id}
	}
	for _, tg := range []int{0, 1, 4, 16} {
		for td := 1; td <= 4; td++ {
			pairsMeet(t, r, topic, Shards{Depth: 2, TopicDepth: td, TopicGroups: tg})
			pairsMeet(t, r, topic, Shards{Depth: 2, TopicDepth: td, TopicGroups: tg, TopicSpread: true})
		}
	}
	for _, bad := range []Shards{{Depth: 2, TopicDepth: 5}, {Depth: 2, TopicGroups: 257}, {Depth: 2, TopicGroups: -1}} {
		if err := bad.Validate(); err == nil {
			t.Fatalf("%+v accepted", bad)
		}
	}
	// Sixteen topic shards spread one busy top-level topic's subtopics
	// over more than four.
	m := Shards{Depth: 2, TopicDepth: 2, TopicGroups: 16}
	spread := map[string]bool{}
	for x := range uint32(64) {
		spread[m.Home([]subscriptions.Cell{{NS: subscriptions.NSTopic, ID: dewey.ID{7, x + 1}}})] = true
	}
	if len(spread) <= 4 || len(m.All()) != 1+DefaultShardGroups+16 {
		t.Fatalf("64 subtopics over 16 topic shards live in %d: %v", len(spread), spread)
	}
}

// pairsMeet checks layout m on 20,000 random topic pairs: each
// subscription's home holds every publication it overlaps, and one
// top-level topic's subtopics (or, spread by user, its own subscribers)
// live in more than one shard.
func pairsMeet(t *testing.T, r *rand.Rand, topic func() subscriptions.Cell, m Shards) {
	t.Helper()
	td := m.topicDepth()
	all := m.All()
	spread, own := map[string]bool{}, map[string]bool{}
	home := func(c subscriptions.Cell) string { return m.Home([]subscriptions.Cell{c}) }
	for range 20000 {
		p, s := topic(), topic()
		uid := fmt.Sprintf("u%d", r.Intn(1000))
		subHome := m.SubHome([]subscriptions.Cell{s}, uid, false)
		targets := m.Targets([]subscriptions.Cell{p})
		if targets[0] != home(p) || len(slices.Compact(slices.Sorted(slices.Values(targets)))) != len(targets) {
			t.Fatalf("%s: targets of %v: %v (home %s)", m, p.ID, targets, home(p))
		}
		for _, x := range targets {
			if !IsTopic(x) || !slices.Contains(all, x) {
				t.Fatalf("%s: %v targets shard %s", m, p.ID, x)
			}
		}
		if (len(p.ID) < td || m.TopicSpread) && len(targets) != m.topicGroups() {
			t.Fatalf("%s: topic %v reaches %v only", m, p.ID, targets)
		}
		if overlaps(p, s) && !slices.Contains(targets, subHome) {
			t.Fatalf("%s: publication %v misses subscription %v of %s: home %s, targets %v", m, p.ID, s.ID, uid, subHome, targets)
		}
		if !slices.Contains(m.Candidates(s, uid), subHome) {
			t.Fatalf("%s: subscription %v of %s lives in %s, not among its candidates %v", m, s.ID, uid, subHome, m.Candidates(s, uid))
		}
		if !m.TopicSpread && subHome != home(s) {
			t.Fatalf("%s: subscription %v lives in %s by its cells, %s by SubHome", m, s.ID, home(s), subHome)
		}
		if prior := m.PriorShards([]subscriptions.Cell{s}, m.SubHome([]subscriptions.Cell{s}, uid, true)); m.TopicSpread && prior != nil {
			t.Fatalf("%s: a self-join of %s asks %v for the user's subscriptions, which all live in its home", m, uid, prior)
		}
		selfJoinMeets(t, m, []subscriptions.Cell{p}, []subscriptions.Cell{s}, uid, overlaps(p, s))
		if len(s.ID) >= td && s.ID[0] == 1 {
			spread[subHome] = true
		}
		if len(s.ID) == 1 && s.ID[0] == 1 {
			own[subHome] = true
		}
	}
	if td > 1 && m.topicGroups() > 1 && len(spread) < 2 {
		t.Fatalf("%s: the subtopics of one top-level topic all live in %v", m, spread)
	}
	if m.TopicSpread && m.topicGroups() > 1 && len(own) < 2 {
		t.Fatalf("%s: the subscribers of one top-level topic all live in %v", m, own)
	}
}

// selfJoinMeets checks that a self-join subscription of uid on s lives
// where a publication on p that overlaps it is stored, and where its sid
// is looked for.
func selfJoinMeets(t *testing.T, m Shards, p, s []subscriptions.Cell, uid string, overlap bool) {
	t.Helper()
	home := m.SubHome(s, uid, true)
	if overlap && !slices.Contains(m.Targets(p), home) {
		t.Fatalf("%v: publication %v misses self-join subscription %v: home %s, targets %v", m, p, s, home, m.Targets(p))
	}
	if !slices.Contains(m.Candidates(s[0], uid), home) {
		t.Fatalf("%v: self-join %v lives in %s, not among the candidates of its first cell %v", m, s, home, m.Candidates(s[0], uid))
	}
}

// cells1 sorts and dedups a record's cells as the store does.
func cells1(cs []subscriptions.Cell) []subscriptions.Cell {
	slices.SortFunc(cs, subscriptions.Cell.Compare)
	return slices.CompactFunc(cs, func(a, b subscriptions.Cell) bool { return a.Compare(b) == 0 })
}

func anyOverlap(a, b []subscriptions.Cell) bool {
	for _, x := range a {
		for _, y := range b {
			if overlaps(x, y) {
				return true
			}
		}
	}
	return false
}

// TestACitySpreads: at the default layout, places over New York's five
// boroughs spread over most shards, and circles of a few hundred metres
// mostly stay in one.
func TestACitySpreads(t *testing.T) {
	m := Shards{}
	r := rand.New(rand.NewSource(9))
	const n = 4000
	for _, radius := range []float64{0, 300} {
		homes := map[string]int{}
		for range n {
			lat, lng := 40.55+r.Float64()*0.35, -74.1+r.Float64()*0.35
			c, err := geo.NewCircle(lat, lng, radius)
			if err != nil {
				t.Fatal(err)
			}
			ids, err := c.Cover(8, geo.DefaultLevel)
			if err != nil {
				t.Fatal(err)
			}
			var cs []subscriptions.Cell
			for _, id := range ids {
				cs = append(cs, subscriptions.Cell{NS: subscriptions.NSCell, ID: id})
			}
			homes[m.Home(cs)]++
		}
		busiest := 0
		for s, k := range homes {
			if s != Overflow {
				busiest = max(busiest, k)
			}
		}
		t.Logf("radius %.0f m: %d shards, the busiest holds %d, g0 %d of %d", radius, len(homes), busiest, homes[Overflow], n)
		if len(homes) < 12 || busiest > n/5 || homes[Overflow] > n/5 {
			t.Fatalf("radius %.0f m over New York: homes %v", radius, homes)
		}
	}
}
