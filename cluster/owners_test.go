package cluster

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// The lease loop's walk over a holder's routes (moved) skips routes that
// cannot need it; against an oracle that walks every route every tick,
// random owner changes and route transitions must resume exactly the same
// routes at each tick.
func TestMovedLikeAFullWalk(t *testing.T) {
	for seed := int64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewSource(seed))
		h := newHolder(&Node{})
		shards := []string{"g11", "g12", "g13"}
		nodes := []string{"", "n1#1", "n2#1", "n3#4"}
		var rs []*route
		for i := range 12 {
			r := &route{id: uint64(i + 1), sid: fmt.Sprint("s", i), shard: shards[rng.Intn(len(shards))], state: opening}
			h.put(r)
			h.live(r, nodes[1+rng.Intn(3)])
			rs = append(rs, r)
		}
		owners := map[string]string{}
		for step := range 300 {
			r := rs[rng.Intn(len(rs))]
			switch rng.Intn(6) {
			case 0: // a lease changes hands (or lapses)
				next := map[string]string{}
				for k, v := range owners {
					next[k] = v
				}
				next[shards[rng.Intn(len(shards))]] = nodes[rng.Intn(len(nodes))]
				owners = next
			case 1: // a resume or subscribe answered through some owner
				if r.state == resuming || r.state == opening {
					h.live(r, nodes[1+rng.Intn(3)])
				}
			case 2: // a resume found no owner
				if r.state == resuming {
					h.orphan(r)
				}
			case 3: // the sink fell behind, or the route is made again
				if r.state == live {
					r.state = []int{lagging, opening}[rng.Intn(2)]
				}
			default: // the lease loop's tick, with a copy of the map
				want := oracleMoved(h, owners)
				var got []string
				for _, x := range h.moved(copyMap(owners)) {
					got = append(got, x.sid)
				}
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d: resumed %v, a full walk resumes %v", seed, step, got, want)
				}
			}
		}
	}
}

// oracleMoved is what a walk of every route resumes under owners.
func oracleMoved(h *holder, owners map[string]string) []string {
	var out []string
	for _, r := range h.routes {
		if (r.state == live && owners[r.shard] != r.node) || (r.state == orphan && owners[r.shard] != "") {
			out = append(out, r.sid)
		}
	}
	slices.Sort(out)
	return out
}

func copyMap(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
