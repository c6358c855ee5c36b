package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/seed84792017/cellcast/bench/procs"
	"github.com/seed84792017/cellcast/cluster"
	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/geo"
)

// The cluster settles on as many shards as its nodes' flags make.
func TestShardCount(t *testing.T) {
	for _, c := range []struct {
		flags []string
		want  int
	}{
		{nil, 1 + 16 + 4},
		{[]string{"--cluster-election-timeout", "4s"}, 1 + 16 + 4},
		{[]string{"--shard-groups", "3"}, 1 + 3 + 4},
		{[]string{"-shard-groups=8", "--replicas", "3"}, 1 + 8 + 4},
		{[]string{"--shard-depth", "12"}, 1 + 16 + 4},
	} {
		if got := len(layout(c.flags).All()); got != c.want {
			t.Errorf("%v: %d shards, want %d", c.flags, got, c.want)
		}
	}
}

// The median of an odd count is its middle, of an even one the mean of
// the two middle values.
func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{2.1}, 2.1},
		{[]float64{2.3, 1.7, 1.9}, 1.9},
		{[]float64{2.0, 1.0, 4.0, 3.0}, 2.5},
	} {
		if got := median(slices.Clone(c.xs)); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}

// The layout follows the nodes' flags, in every spelling the broker takes.
func TestLayout(t *testing.T) {
	for _, c := range []struct {
		flags []string
		want  cluster.Shards
	}{
		{nil, cluster.Shards{}},
		{[]string{"--shard-depth", "12"}, cluster.Shards{Depth: 12}},
		{[]string{"-shard-depth=11", "--shard-groups=8"}, cluster.Shards{Depth: 11, Groups: 8}},
		{[]string{"--replicas", "3", "-shard-groups", "4"}, cluster.Shards{Groups: 4}},
	} {
		if got := layout(c.flags); got != c.want {
			t.Errorf("%v: %+v, want %+v", c.flags, got, c.want)
		}
	}
}

// The cells workload: subscriptions on grid cells of level 13 in New
// York's geo shards, publications at levels 10 to 13 and some at 8 (above
// the shard depth), and the notifications owed counted as a brute force
// over the pairs counts them.
func TestCellsWorkload(t *testing.T) {
	w, err := newWorkload(300, 3000, 1, cluster.Shards{})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range w.subs {
		id := dewey.MustParse(s)
		if !geo.IsCell(id) || len(id) != cellsSubLevel+1 || w.subShard[i] == cluster.Overflow {
			t.Fatalf("subscription on %s in shard %s", s, w.subShard[i])
		}
	}
	levels := map[int]int{}
	var owed int64
	for _, p := range w.pubs {
		id := dewey.MustParse(p)
		if !geo.IsCell(id) {
			t.Fatalf("publication on %s", p)
		}
		levels[len(id)-1]++
		for _, s := range w.subs {
			if s == p || strings.HasPrefix(s, p+".") {
				owed++
			}
		}
	}
	for l := range levels {
		if l != cellsShallowLevel && (l < cellsPubMinLevel || l > cellsSubLevel) {
			t.Fatalf("a publication at level %d", l)
		}
	}
	if levels[cellsShallowLevel] == 0 || levels[cellsSubLevel] == 0 || owed != w.owed || owed == 0 {
		t.Fatalf("levels %v, %d owed, counted %d", levels, w.owed, owed)
	}
}

// The moving users lie at or below the layout's shard depth, which a
// deeper --shard-depth moves down; a shallower -min-level is refused.
func TestMovingUsersAtTheShardDepth(t *testing.T) {
	for _, c := range []struct {
		layout              cluster.Shards
		minLevel, level     int
		wantMin, wantHomeGe int
	}{
		{cluster.Shards{}, 0, 16, cluster.DefaultShardDepth - 1, cluster.DefaultShardDepth},
		{cluster.Shards{Depth: 13}, 0, 16, 12, 13},
		{cluster.Shards{}, 12, 14, 12, cluster.DefaultShardDepth},
	} {
		w, err := movingUsers(3000, 1, 0, 0, c.layout, c.minLevel, c.level)
		if err != nil {
			t.Fatal(err)
		}
		if w.minLevel != c.wantMin {
			t.Errorf("%+v: from level %d, want %d", c, w.minLevel, c.wantMin)
		}
		for _, op := range w.ops {
			if len(op.Cell)-1 < c.wantMin || len(op.Cell)-1 > c.level || len(op.Cell) < c.wantHomeGe {
				t.Fatalf("%+v: cell %v", c, op.Cell)
			}
		}
	}
	if _, err := movingUsers(100, 1, 0, 0, cluster.Shards{}, 8, 16); err == nil {
		t.Error("moving users above the shard depth accepted")
	}
}

// Deliveries by shard go to the nodes that report owning the shards; a
// shard no one owns is counted apart; the busiest node's share is named.
func TestShares(t *testing.T) {
	owned := [][]string{{"g1", "g2"}, {"g3", "g0"}}
	var nodes []*procs.Node
	for i, shards := range owned {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			for _, s := range shards {
				fmt.Fprintf(w, "cellcast_cluster_shard_owned{shard=%q} 1\n", s)
			}
		}))
		t.Cleanup(srv.Close)
		nodes = append(nodes, &procs.Node{ID: fmt.Sprint("n", i+1), HTTP: strings.TrimPrefix(srv.URL, "http://")})
	}
	got := shares(nodes, map[string]int64{"g1": 50, "g2": 10, "g3": 30, "g4": 10}, []float64{70, 30})
	want := []nodeShare{{"n1", 60, 70}, {"n2", 30, 30}, {"unowned", 10, 0}}
	if !slices.Equal(got, want) {
		t.Fatalf("%+v, want %+v", got, want)
	}
	if line := formatShares(got); !strings.Contains(line, "n1 60% (60) matched, 70% written") || !strings.HasSuffix(line, "busiest node 60% of the deliveries") {
		t.Fatalf("%q", line)
	}
	if shares(nodes[:1], map[string]int64{"g1": 1}, []float64{1}) != nil {
		t.Fatal("shares of one node")
	}
}
