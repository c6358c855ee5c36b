package main

import (
	"runtime"
	"strconv"
	"strings"

	"github.com/seed84792017/cellcast/bench/procs"
	"github.com/seed84792017/cellcast/cluster"
)

// clusterSize is how many nodes the cluster runs.
const clusterSize = 3

// nodeFlags are more broker flags for the cluster's nodes (-node-flags).
var nodeFlags string

// nodeProcs is GOMAXPROCS for each of the cluster's nodes (-node-procs);
// 0 leaves the Go runtime's default, every core for every node.
var nodeProcs int

// shareOfCores is -node-procs's default: this machine's cores shared
// among the cluster's nodes, at least one each. Three machines would give
// each node cores of its own; on one machine, each node's runtime left to
// its default runs as many threads of Go code as there are cores, three
// times the cores in all, and their wake-ups and context switches are a
// cost of running three processes on two cores, not of the cluster path
// (docs/cluster-benchmarks.md). One node keeps the
// default: the whole machine is its share.
func shareOfCores() int { return max(1, runtime.NumCPU()/clusterSize) }

// startNodes starts the cluster's nodes under dir with args and
// -node-flags, each with -node-procs, and waits until each is ready.
func startNodes(bin, dir string, args ...string) (*procs.Cluster, error) {
	c := &procs.Cluster{Bin: bin, Log: dir, Args: append(args, strings.Fields(nodeFlags)...)}
	if nodeProcs > 0 {
		c.Env = []string{"GOMAXPROCS=" + strconv.Itoa(nodeProcs)}
	}
	if err := c.Start(clusterSize); err != nil {
		return nil, err
	}
	return c, nil
}

// layout is the shard layout the nodes run with flags: the broker's
// defaults unless --shard-depth, --shard-groups or --topic-shard-groups
// say otherwise.
func layout(flags []string) cluster.Shards {
	return cluster.Shards{Depth: intFlag(flags, "shard-depth"), Groups: intFlag(flags, "shard-groups"), TopicGroups: intFlag(flags, "topic-shard-groups")}
}

// intFlag is the last value flags give the broker flag name (-name v,
// --name v, -name=v, --name=v), 0 when none does.
func intFlag(flags []string, name string) int {
	n := 0
	for i, f := range flags {
		f = strings.TrimLeft(f, "-")
		v, ok := strings.CutPrefix(f, name+"=")
		if f == name && i+1 < len(flags) {
			v, ok = flags[i+1], true
		}
		if x, err := strconv.Atoi(v); ok && err == nil {
			n = x
		}
	}
	return n
}
