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

// movingUsers is the moving-user workload of the broker's other
// benchmarks (bench/workload: 10k users over New York, quad tree depth 8,
// 3 subscriptions per publication), kept at or below the shard depth so
// that the load generator's oracle holds on a cluster (workload.MinLevel).
// rate spaces the operations in time for an open loop (0: the workload's
// default, unused by a closed loop).
func movingUsers(ops int, seed int64, life time.Duration, rate float64) ([]workload.Op, error) {
	g, err := workload.New(workload.Config{Seed: seed, Ops: ops, Users: 10000, SubsPerPub: 3, Space: workload.Quad, Depth: 8, MinLevel: 2,
		Past: life, Future: life, Expires: life, Rate: rate})
	if err != nil {
		return nil, err
	}
	return g.All(), nil
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
func measureMoving(nodes []*procs.Node, ops []workload.Op, seed int64, ahead int, closed, toOwner bool) (result, error) {
	var urls []string
	for _, n := range nodes {
		urls = append(urls, n.WS())
	}
	var route func(dewey.ID) int
	if toOwner && len(nodes) > 1 {
		var err error
		if route, err = ownerRoute(nodes); err != nil {
			return result{}, err
		}
	}
	m, err := startMeter(nodes)
	if err != nil {
		return result{}, err
	}
	rep, err := loadgen.Run(context.Background(), loadgen.Config{WSURLs: urls, Ops: ops, Closed: closed, Conns: 16, PubConns: 4, Window: 16, Ahead: ahead, Route: route,
		Seed: seed, Settle: 500 * time.Millisecond})
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
	return r, nil
}

// ownerRoute reads, once the nodes have settled which shard each serves
// (the same owners for a second), a route from a cell to the index of the
// node owning its shard (the default layout, as procs.StartCluster runs).
func ownerRoute(nodes []*procs.Node) (func(dewey.ID) int, error) {
	shards := cluster.Shards{}
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
