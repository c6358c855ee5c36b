package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/seed84792017/cellcast/bench/procs"
)

// nodeShare is what one node of a run carried. A subscription lives in
// one shard, whose owner matches every publication it is owed and sends
// the notifications (to the node holding the client, when another): so
// matched, the deliveries (notifications and past results) of the
// subscriptions in the shards the node owns, is the work the layout
// spread onto it. Written is what it wrote to the clients connected to it,
// which follows where the clients connect, not the layout.
type nodeShare struct {
	id      string
	matched int64
	written float64
}

// indexShards numbers the distinct names of shards (by first appearance),
// so that a handler counts into a slice.
func indexShards(shards []string) (of []int32, names []string) {
	index := map[string]int32{}
	for _, s := range shards {
		k, ok := index[s]
		if !ok {
			k = int32(len(names))
			index[s] = k
			names = append(names, s)
		}
		of = append(of, k)
	}
	return of, names
}

// shares sums the deliveries by shard onto the nodes that own the shards
// now (read from their metrics, so call it before they stop); for one
// node, nil. Deliveries in a shard no node reports owning go to a share
// named "unowned".
func shares(nodes []*procs.Node, delivered map[string]int64, written []float64) []nodeShare {
	if len(nodes) < 2 {
		return nil
	}
	owner := procs.ShardOwners(nodes, slices.Sorted(maps.Keys(delivered)))
	out := make([]nodeShare, len(nodes))
	for i, n := range nodes {
		out[i] = nodeShare{id: n.ID, written: written[i]}
	}
	for shard, n := range delivered {
		i, ok := owner[shard]
		if !ok {
			if len(out) == len(nodes) {
				out = append(out, nodeShare{id: "unowned"})
			}
			i = len(nodes)
		}
		out[i].matched += n
	}
	return out
}

// formatShares is a line of each node's shares, with the largest share of
// the matched deliveries: with three nodes, at most half says the layout
// spread the workload.
func formatShares(ns []nodeShare) string {
	var matched int64
	var written float64
	for _, n := range ns {
		matched += n.matched
		written += n.written
	}
	pct := func(x, total float64) float64 {
		if total == 0 {
			return 0
		}
		return 100 * x / total
	}
	var parts []string
	busiest := 0.0
	for _, n := range ns {
		p := pct(float64(n.matched), float64(matched))
		busiest = max(busiest, p)
		parts = append(parts, fmt.Sprintf("%s %.0f%% (%d) matched, %.0f%% written", n.id, p, n.matched, pct(n.written, written)))
	}
	return fmt.Sprintf("%s; busiest node %.0f%% of the deliveries", strings.Join(parts, "; "), busiest)
}
