package owed

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/subscriptions"
)

var seeds = flag.Int("owed.seeds", 20, "random workloads in TestWalkAgreesWithTheOracle")

type clock struct{ t int64 }

func (c *clock) Now() int64 { return c.t }

// randomRun draws operations on a small tree at random instants and
// replays them through subscriptions.Oracle (brute force over every
// record), which stamps them; it returns them with the pairs the oracle
// reported.
func randomRun(t *testing.T, rng *rand.Rand) ([]Sub, []Pub, Pairs) {
	t.Helper()
	cells := []string{"1", "2", "1.1", "1.2", "1.1.3", "1.1.4", "2.3", "1.2.1"}
	ck := &clock{t: 1_000_000}
	o := subscriptions.NewOracle(ck, subscriptions.Limits{})
	var subs []Sub
	var pubs []Pub
	pairs := Pairs{}
	bySid := map[int64]int{}
	ms := func(n int) time.Duration { return time.Duration(rng.Intn(n)) * time.Millisecond }
	for range 300 {
		ck.t += int64(ms(40) + time.Millisecond) // whole milliseconds, so windows end exactly on stamps
		cs := cells[rng.Intn(len(cells))]
		cell, err := subscriptions.ParseCell(cs)
		if err != nil {
			t.Fatal(err)
		}
		uid := fmt.Sprint("u", rng.Intn(5))
		if rng.Intn(3) == 0 {
			req := &subscriptions.SubscribeRequest{Uid: uid, Cell: cell, Past: ms(600), Future: ms(800), SelfJoin: rng.Intn(3) == 0}
			res, err := o.Subscribe(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			s := res.Sub
			bySid[s.Ts] = len(subs)
			subs = append(subs, Sub{Uid: uid, Cell: cs, Ts: s.Ts, Tmin: s.Ts - int64(req.Past), Tmax: s.Ts + int64(req.Future), SelfJoin: req.SelfJoin})
			for _, p := range res.Past {
				pairs.Add(Past, len(subs)-1, p.Tp)
			}
			continue
		}
		req := &subscriptions.PublishRequest{Uid: uid, Cell: cell, Expires: ms(700)}
		res, err := o.Publish(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		pubs = append(pubs, Pub{Cell: cs, Tp: res.Pub.Tp, Tmax: res.Pub.Tp + int64(req.Expires)})
		for _, s := range res.Matches {
			pairs.Add(Live, bySid[s.Ts], res.Pub.Tp)
		}
	}
	return subs, pubs, pairs
}

// TestWalkAgreesWithTheOracle: Walk owes exactly the pairs that the
// brute-force oracle of package subscriptions returns, self-joins included.
func TestWalkAgreesWithTheOracle(t *testing.T) {
	for seed := range int64(*seeds) {
		rng := rand.New(rand.NewSource(seed))
		subs, pubs, oracle := randomRun(t, rng)
		walked := Pairs{}
		Walk(subs, pubs, walked.Add)
		if d := Compare(oracle, walked); len(d) > 0 {
			t.Fatalf("seed %d: %d pairs differ, first %+v", seed, len(d), d[0])
		}
		var n [2]int
		for k := range oracle {
			n[k.k]++
		}
		if n[Live] == 0 || n[Past] == 0 {
			t.Fatalf("seed %d: a run that proves nothing: %v", seed, n)
		}
	}
}

// TestTallyCatchesLossAndRepeats injects into what a run received a
// missing pair, a duplicated one, both at once (the count stays right)
// and one never owed: each makes exactly that subscription differ, and
// Compare names the pair.
func TestTallyCatchesLossAndRepeats(t *testing.T) {
	subs, pubs, owedPairs := randomRun(t, rand.New(rand.NewSource(7)))
	var keys []pairKey
	for k := range owedPairs {
		keys = append(keys, k)
	}
	tally := func(p Pairs) *Tally {
		x := NewTally(len(subs))
		for k, n := range p {
			for range n {
				x.Add(k.k, k.sub, k.tp)
			}
		}
		return x
	}
	want := NewTally(len(subs))
	Walk(subs, pubs, want.Add)
	if d := append(want.Differ(tally(owedPairs), Live), want.Differ(tally(owedPairs), Past)...); len(d) > 0 {
		t.Fatalf("the complete run differs at %v", d)
	}
	// Map order is random: sort, then take the first two pairs of one
	// subscription and kind, so the swap keeps that subscription's count.
	sort.Slice(keys, func(i, j int) bool {
		x, y := keys[i], keys[j]
		if x.sub != y.sub {
			return x.sub < y.sub
		}
		if x.k != y.k {
			return x.k < y.k
		}
		return x.tp < y.tp
	})
	var a, b pairKey
	found := false
	for i := 1; i < len(keys) && !found; i++ {
		if keys[i].sub == keys[i-1].sub && keys[i].k == keys[i-1].k {
			a, b, found = keys[i-1], keys[i], true
		}
	}
	if !found {
		t.Fatal("no subscription with two pairs of a kind")
	}
	cases := map[string]func(Pairs){
		"missing":   func(p Pairs) { delete(p, a) },
		"duplicate": func(p Pairs) { p[a]++ },
		"swapped":   func(p Pairs) { delete(p, a); p[b]++ },
		"unexpected": func(p Pairs) {
			p[pairKey{a.k, a.sub, a.tp + 1}]++
		},
	}
	for name, inject := range cases {
		got := Pairs{}
		for k, n := range owedPairs {
			got[k] = n
		}
		inject(got)
		if d := want.Differ(tally(got), a.k); len(d) != 1 || d[0] != a.sub {
			t.Fatalf("%s: differing subscriptions %v, want [%d]", name, d, a.sub)
		}
		probs := Compare(owedPairs, got)
		if len(probs) == 0 || probs[0].Sub != a.sub {
			t.Fatalf("%s: %+v", name, probs)
		}
	}
}

// TestImportsNothingItChecks: the oracle is built from the standard
// library alone, so a bug in the broker's matching, stores or delivery
// cannot hide in it.
func TestImportsNothingItChecks(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) != 1 || !strings.HasSuffix(deps[0], "/bench/owed") {
		t.Fatalf("bench/owed depends on %v", deps)
	}
}
