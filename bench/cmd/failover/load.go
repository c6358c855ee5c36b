package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/seed84792017/cellcast/bench/loadgen"
	"github.com/seed84792017/cellcast/bench/procs"
	"github.com/seed84792017/cellcast/bench/workload"
	"github.com/seed84792017/cellcast/cluster"
	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/subscriptions"
)

// underLoad runs the load generator against every node (its connections
// spread over them, each falling back on the others) and kills, a third
// of the way through, the node that serves most of the workload's
// operations (busiest). The load generator's
// oracle then checks that every acknowledged operation was answered for:
// every past result and notification owed arrived exactly once, those of
// the killed node's clients too, which reconnect to the others and
// resume. Its longest gaps without a reply, per shard, are the failover
// as the clients saw it.
func underLoad(c *procs.Cluster, ops int, rate float64) error {
	// S2 cells at or below the shard depth, as cmd/loadgen -shard-depth
	// makes them: each operation is stamped in one shard, as the oracle
	// needs.
	g, err := workload.New(workload.Config{Seed: 1, Ops: ops, Users: 2000, Rate: rate, Space: workload.S2,
		MinLevel: cluster.DefaultShardDepth - 1, Past: 10 * time.Second, Future: time.Minute, Expires: time.Minute})
	if err != nil {
		return err
	}
	all := g.All()
	victim, share, err := busiest(c, all)
	if err != nil {
		return err
	}
	var urls []string
	for _, nd := range c.Nodes {
		urls = append(urls, nd.WS())
	}
	span := time.Duration(float64(ops) / rate * float64(time.Second))
	var killed time.Time
	killErr := make(chan error, 1)
	kill := time.AfterFunc(span/3, func() {
		killed = time.Now()
		killErr <- c.Kill(victim)
	})
	defer kill.Stop()
	start := time.Now()
	rep, err := loadgen.Run(context.Background(), loadgen.Config{WSURLs: urls, Ops: all, Conns: 6, PubConns: 3,
		Window: 16, Shard: shardOf, Seed: 1})
	if err != nil {
		return err
	}
	select {
	case err := <-killErr:
		if err != nil {
			return err
		}
	default:
		return errors.New("the run ended before the kill")
	}
	comp := rep.Completeness
	var gaps []string
	for _, gp := range rep.LongestGaps {
		gaps = append(gaps, fmt.Sprintf("%s: %.1f s (ended %.1f s into the run)", gp.Shard, gp.Ms/1000, gp.EndS))
	}
	fmt.Printf("under load: killed %s (serving %.0f%% of the operations) %v into the run; %d subscribes and %d publishes acknowledged, errors %v; "+
		"%d live notifications and %d past results owed, %d notifications of unanswered publications; longest gaps without a reply: %s\n",
		c.Nodes[victim].ID, 100*share, killed.Sub(start).Round(time.Millisecond), rep.Subscribes, rep.Publishes, rep.Errors,
		comp.ExpectedLive, comp.ExpectedPast, comp.FromUnanswered, strings.Join(gaps, "; "))
	if !comp.OK() {
		return fmt.Errorf("completeness after kill -9: %d missing, %d twice, %d unexpected: %s", comp.Missing, comp.Duplicates,
			comp.Unexpected, strings.Join(comp.Examples, "; "))
	}
	if comp.ExpectedLive == 0 || comp.ExpectedPast == 0 {
		return fmt.Errorf("a run that proves nothing: %+v", comp)
	}
	fmt.Println("under load: every notification and past result owed arrived exactly once")
	return nil
}

// shardOf is the shard of the default layout (procs.StartCluster's) that a
// cell's subscriptions live in.
func shardOf(cell dewey.ID) string {
	return cluster.Shards{}.Home([]subscriptions.Cell{{NS: subscriptions.NSCell, ID: cell}})
}

// busiest returns the node whose shards the most of ops fall in, and
// that share, from each node's cellcast_cluster_shard_owned series.
func busiest(c *procs.Cluster, ops []workload.Op) (int, float64, error) {
	perShard := map[string]int{}
	for _, op := range ops {
		perShard[shardOf(op.Cell)]++
	}
	owner := procs.ShardOwners(c.Nodes, slices.Collect(maps.Keys(perShard)))
	best, most := 0, -1
	for i := range c.Nodes {
		n := 0
		for shard, k := range perShard {
			if o, ok := owner[shard]; ok && o == i {
				n += k
			}
		}
		if n > most {
			best, most = i, n
		}
	}
	if most <= 0 {
		return 0, 0, errors.New("no node serves the workload's shards")
	}
	return best, float64(most) / float64(len(ops)), nil
}
