package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/seed84792017/cellcast/bench/loadgen"
	"github.com/seed84792017/cellcast/bench/procs"
	"github.com/seed84792017/cellcast/bench/workload"
	"github.com/seed84792017/cellcast/cluster"
	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/subscriptions"
)

// moving is the moving-user workload and the S2 levels it was drawn at.
type moving struct {
	ops             []workload.Op
	minLevel, level int
}

// movingUsers is the moving-user workload of the broker's other
// benchmarks (bench/workload's s2 space: 10k users over New York, 3
// subscriptions per publication), its cells from S2 level minLevel (0: the
// shard depth's) to level, at or below the shard depth of the cluster's
// layout so that the load generator's oracle holds on a cluster (each
// operation stamped in one shard) and the layout spreads the city over
// its geo shards. rate spaces the operations in time for an open loop (0:
// the workload's default, unused by a closed loop).
func movingUsers(ops int, seed int64, life time.Duration, rate float64, layout cluster.Shards, minLevel, level int) (moving, error) {
	atShards := layout.Depth - 1 // S2 level of the shard depth's cells
	if layout.Depth == 0 {
		atShards = cluster.DefaultShardDepth - 1
	}
	if minLevel == 0 {
		minLevel = atShards
	}
	if minLevel < atShards || level < minLevel {
		return moving{}, fmt.Errorf("moving users at S2 levels %d to %d: the cluster's shard depth needs them at level %d or deeper, -min-level ≤ -level",
			minLevel, level, atShards)
	}
	g, err := workload.New(workload.Config{Seed: seed, Ops: ops, Users: 10000, SubsPerPub: 3, Space: workload.S2, MinLevel: minLevel, Level: level,
		Past: life, Future: life, Expires: life, Rate: rate})
	if err != nil {
		return moving{}, err
	}
	return moving{ops: g.All(), minLevel: minLevel, level: level}, nil
}

// measureMoving runs ops through bench/loadgen (16 subscriber and 4
// publisher connections spread over the nodes, 16 in flight each), closed
// loop or at the operations' times, and checks its oracle. A delivery is
// a live notification or a past result. In a closed loop, ahead keeps
// the connections within that many operations of the workload's order, so
// the split between the two follows the workload for both systems;
// unbounded (0), it follows the timing: a system whose subscribes are
// slower than its publishes answers more of them as (cheaper) past
// results.
func measureMoving(nodes []*procs.Node, ops []workload.Op, layout cluster.Shards, seed int64, ahead int, closed, toOwner bool) (result, error) {
	var urls []string
	for _, n := range nodes {
		urls = append(urls, n.WS())
	}
	var route func(dewey.ID) int
	if toOwner && len(nodes) > 1 {
		var err error
		if route, err = ownerRoute(nodes, layout); err != nil {
			return result{}, err
		}
	}
	shard := func(cell dewey.ID) string {
		return layout.Home([]subscriptions.Cell{{NS: subscriptions.NSCell, ID: cell}})
	}
	m, err := startMeter(nodes)
	if err != nil {
		return result{}, err
	}
	rep, err := loadgen.Run(context.Background(), loadgen.Config{WSURLs: urls, Ops: ops, Closed: closed, Conns: 16, PubConns: 4, Window: 16, Ahead: ahead, Route: route,
		Shard: shard, Seed: seed, Settle: 500 * time.Millisecond})
	if err != nil {
		return result{}, err
	}
	secs, cpu, err := m.stop()
	if err != nil {
		return result{}, err
	}
	comp := rep.Completeness
	if !comp.OK() {
		return result{}, fmt.Errorf("completeness: %d missing, %d twice, %d unexpected: %s", comp.Missing, comp.Duplicates, comp.Unexpected,
			strings.Join(comp.Examples, "; "))
	}
	refused := int64(rep.Errors["publish: overloaded"]) // back-pressure, not owed
	if len(rep.Errors) > 1 || len(rep.Errors) == 1 && refused == 0 {
		return result{}, fmt.Errorf("errors: %v", rep.Errors)
	}
	got := int64(rep.Notifications + rep.PastResults)
	r := result{seconds: secs, cpu: cpu, got: got, owed: int64(comp.ExpectedLive + comp.ExpectedPast), live: int64(rep.Notifications),
		refused: refused}
	m.messages(&r, rep.Publishes)
	delivered := map[string]int64{}
	for name, d := range rep.Shards {
		delivered[name] = d.Notifications + d.PastResults
	}
	r.nodes = shares(nodes, delivered, m.written())
	return r, nil
}

// ownerRoute reads, once the nodes have settled which shard each serves
// (the same owners for a second), a route from a cell to the index of the
// node owning its shard in the nodes' layout.
func ownerRoute(nodes []*procs.Node, shards cluster.Shards) (func(dewey.ID) int, error) {
	read := func() map[string]int { return procs.ShardOwners(nodes, shards.All()) }
	last, since := read(), time.Now()
	for deadline := time.Now().Add(30 * time.Second); time.Since(since) < time.Second; {
		if time.Now().After(deadline) {
			return nil, errors.New("-to-owner: the shards' owners did not settle")
		}
		time.Sleep(200 * time.Millisecond)
		if now := read(); !maps.Equal(now, last) || len(now) < len(shards.All()) {
			last, since = now, time.Now()
		}
	}
	return func(cell dewey.ID) int {
		return last[shards.Home([]subscriptions.Cell{{NS: subscriptions.NSCell, ID: cell}})]
	}, nil
}
