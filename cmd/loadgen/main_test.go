package main

import (
	"testing"

	"github.com/seed84792017/cellcast/bench/workload"
	"github.com/seed84792017/cellcast/cluster"
	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/subscriptions"
)

// -shard-depth keeps the s2 workload at or below the cluster's shard
// depth: the default levels already are for the README's commands, a
// deeper layout raises the shallowest level, and a -level above the
// depth is refused.
func TestLevelsForAShardDepth(t *testing.T) {
	for _, c := range []struct {
		shardDepth, level, minLevel int
		wantMin                     int
	}{
		{0, 16, 10, 10}, {2, 16, 10, 10}, {10, 16, 10, 10}, {12, 16, 10, 11}, {17, 16, 10, 16},
	} {
		cfg := workload.Config{Space: workload.S2}
		if err := levels(&cfg, c.level, c.minLevel, c.shardDepth); err != nil || cfg.MinLevel != c.wantMin || cfg.Level != c.level {
			t.Errorf("shard depth %d: levels %d…%d (%v), want %d…%d", c.shardDepth, cfg.MinLevel, cfg.Level, err, c.wantMin, c.level)
		}
	}
	if err := levels(&workload.Config{Space: workload.S2}, 12, 10, 14); err == nil {
		t.Error("-level 12 with -shard-depth 14 accepted")
	}
	if err := levels(&workload.Config{Space: workload.S2}, 0, 0, 0); err == nil {
		t.Error("-level 0 accepted")
	}
}

// Every operation of a cluster's workload lives in one geo shard of the
// layout (never g0, which no other shard's stamps would match), and the
// shards it spreads over are several.
func TestClusterWorkloadFitsTheShards(t *testing.T) {
	cfg := workload.Config{Seed: 1, Ops: 5000, Users: 2000, Space: workload.S2}
	if err := levels(&cfg, 16, 10, cluster.DefaultShardDepth); err != nil {
		t.Fatal(err)
	}
	ops, err := load("", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := fitsShards(ops, cluster.DefaultShardDepth); err != nil {
		t.Fatal(err)
	}
	homes := map[string]int{}
	for _, op := range ops {
		h := cluster.Shards{}.Home([]subscriptions.Cell{{NS: subscriptions.NSCell, ID: op.Cell}})
		if h == cluster.Overflow {
			t.Fatalf("cell %v lives in the overflow shard", op.Cell)
		}
		homes[h]++
	}
	if len(homes) < 4 {
		t.Fatalf("New York over %d shards: %v", len(homes), homes)
	}
	for _, bad := range []workload.Op{
		{Kind: workload.Subscribe, Uid: "u", Cell: dewey.MustParse("4.1.2"), Future: 1},
		{Kind: workload.Publish, Uid: "u", Cell: ops[0].Cell, SelfJoin: true, Expires: 1},
	} {
		if err := fitsShards([]workload.Op{bad}, cluster.DefaultShardDepth); err == nil {
			t.Errorf("%+v accepted for a cluster", bad)
		}
	}
}
