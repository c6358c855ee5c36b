package cluster

import (
	"math/rand"
	"testing"
)

// The route table against a map: routes numbered in order, most short
// lived and some living on while thousands are numbered after them (so
// that slots collide and routes spill), looked up by every number given
// so far, present or not.
func TestRouteTableLikeMap(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var tab routeTable
	oracle := map[uint64]*route{}
	var live []uint64
	next := uint64(0)
	check := func(step int) {
		for range 20 {
			id := uint64(rng.Int63n(int64(next) + 2))
			if got, want := tab.get(id), oracle[id]; got != want {
				t.Fatalf("step %d: get(%d) = %v, want %v", step, id, got, want)
			}
		}
		if tab.n != len(oracle) {
			t.Fatalf("step %d: %d routes counted, %d held", step, tab.n, len(oracle))
		}
	}
	for step := range 200000 {
		switch {
		case rng.Intn(3) > 0 || len(live) == 0:
			next++
			r := &route{id: next}
			if rng.Intn(5) == 0 && len(live) > 0 { // a route put again under a number it had
				r.id = live[rng.Intn(len(live))]
			} else {
				live = append(live, next)
			}
			tab.put(r)
			oracle[r.id] = r
		default:
			i := rng.Intn(len(live))
			if rng.Intn(50) > 0 { // most go soon; a few outlive thousands
				i = len(live) - 1 - rng.Intn(min(len(live), 50))
			}
			id := live[i]
			live[i] = live[len(live)-1]
			live = live[:len(live)-1]
			tab.del(id)
			delete(oracle, id)
			tab.del(id) // gone already: nothing
		}
		check(step)
	}
	if len(tab.spill) == 0 {
		t.Fatal("no route ever spilled: the test does not reach the table's second place")
	}
}
