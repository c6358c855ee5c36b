package main

import (
	"flag"
	"os"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/bench/procs"
	"github.com/seed84792017/cellcast/cluster"
	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/geo"
)

// The probes are grid cells over New York, one in each geo shard of the
// default layout.
func TestProbeCellsCoverTheGeoShards(t *testing.T) {
	shards := map[string]bool{}
	for _, c := range cells() {
		id := dewey.MustParse(c)
		bounds, err := geo.CellBounds(id)
		if err != nil || len(id) != cluster.DefaultShardDepth {
			t.Fatalf("%s: not a grid cell at the shard depth (%v)", c, err)
		}
		if lat, lng := bounds[0][0], bounds[0][1]; lat < 40 || lat > 45.5 || lng < -80.5 || lng > -71.5 {
			t.Fatalf("%s: a corner at (%g, %g), not in New York", c, lat, lng)
		}
		shards[shardOf(id)] = true
	}
	if len(shards) != cluster.DefaultShardGroups || shards[cluster.Overflow] {
		t.Fatalf("the probes reach %v", shards)
	}
}

var kill9 = flag.Bool("kill9", false, "run three broker processes and kill -9 them (about a minute)")

// TestKill9 kills one of three real broker processes under load and checks
// completeness, with embedded NATS servers and on a cluster of
// nats-server processes: go test ./bench/cmd/failover -kill9 -v
func TestKill9(t *testing.T) {
	if !*kill9 {
		t.Skip("needs -kill9: builds the broker and runs three processes")
	}
	for _, external := range []bool{false, true} {
		t.Run(map[bool]string{false: "embedded", true: "external"}[external], func(t *testing.T) {
			wd, _ := os.Getwd()
			if err := os.Chdir("../../.."); err != nil { // the repository root, to build ./cmd/broker
				t.Fatal(err)
			}
			defer os.Chdir(wd)
			if external {
				if _, err := procs.NATSServer(""); err != nil {
					t.Skip(err)
				}
			}
			if err := run("", 0, false, 4000, 200, external, "", nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRollingRestartAndGrowth restarts three real broker processes one
// after another with SIGTERM, adds a fourth and a fifth, kills the
// busiest with SIGKILL and restarts it, then stops the first and the
// fifth and removes them for good, each phase under the load generator:
// its oracle must find every notification and past result owed exactly
// once, and none it did not owe, and every log must end on three current
// replicas of the nodes left (issue 39; about three minutes).
// The longest gaps without a reply per shard are printed, not checked:
// go test ./bench/cmd/failover -run Rolling -v
func TestRollingRestartAndGrowth(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the broker and runs up to five processes for about two minutes")
	}
	wd, _ := os.Getwd()
	if err := os.Chdir("../../.."); err != nil { // the repository root, to build ./cmd/broker
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	if err := rollingRun("", false, 100, 9*time.Second, true, nil); err != nil {
		t.Fatal(err)
	}
}
