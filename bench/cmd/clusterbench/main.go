// Command clusterbench measures what the cluster path costs: the same
// workload against one broker and against a three-node cluster (three
// processes on this machine), in the same run, reporting the brokers'
// CPU-seconds per million notifications, NATS messages per operation,
// that every notification owed arrived exactly once, and for the cluster
// each node's share of the deliveries.
//
//	go run ./bench/cmd/clusterbench [-broker BIN] [-subs 4000] [-pubs 20000]
//	go run ./bench/cmd/clusterbench -workload moving [-ops 40000] [-level 16]
//
// Both workloads are on the world grid (S2 cells) at population-weighted
// points over New York. The default workload (cells) subscribes first, at
// S2 level 13 (about 1.2 km), and then publishes at levels 10 to 13, one
// publication in 50 at level 8, above the shard depth: the cluster's
// hardest case, about 48 notifications a publication. -workload moving
// runs the moving-user workload of the broker's other benchmarks
// (bench/workload's s2 space) through bench/loadgen, its cells at S2
// levels -min-level to -level, at or below the cluster's shard depth
// (S2 level 10 by default) so that each operation is stamped in one shard,
// as the load generator's oracle needs, and the layout spreads the city
// over the geo shards. -to-owner sends each of its operations to the node
// owning its cell's shard, as a client that knew the owners would.
// -node-flags passes more flags to the cluster's nodes (a --shard-depth
// or --shard-groups there is the layout the moving workload keeps to and
// the shares are counted in); -node-procs sets their GOMAXPROCS (by
// default the machine's cores shared among the three).
//
// Each node's share: "matched" counts the notifications and past results
// of the subscriptions living in the shards the node owns (each
// subscription lives in one shard, whose owner matches and sends all it
// is owed), counted at the clients; "written" is what the node wrote to
// the clients connected to it (cellcast_notifications_sent_total). With
// three nodes, the busiest node's matched share above half means the
// layout did not spread the workload.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/seed84792017/cellcast/bench/procs"
	"github.com/seed84792017/cellcast/bench/workload"
)

func main() {
	bin := flag.String("broker", "", "broker binary (default: build ./cmd/broker)")
	subs := flag.Int("subs", 4000, "subscriptions")
	pubs := flag.Int("pubs", 20000, "publications")
	conns := flag.Int("conns", 6, "subscriber connections (spread over the nodes)")
	window := flag.Int("window", 16, "publications in flight per publisher connection")
	seed := flag.Int64("seed", 1, "workload seed")
	keep := flag.Bool("keep", false, "keep the brokers' data and logs")
	flag.StringVar(&profileDir, "pprof", "", "write a CPU profile of each broker, from the start of the publications, to this directory")
	flag.DurationVar(&profileFor, "pprof-for", 5*time.Second, "how long the profiles of -pprof run (whole seconds; keep it shorter than the run: a profile still running when its broker stops is lost)")
	kind := flag.String("workload", "cells", "cells (subscriptions first at S2 level 13, publications at levels 8-13) or moving (the moving-user workload)")
	ops := flag.Int("ops", 40000, "operations of the moving-user workload")
	life := flag.Duration("lifetime", 0, "the moving-user workload's windows and expiry (0: the workload's 10 s windows and 20 s expiry)")
	level := flag.Int("level", workload.DefaultS2Level, "moving users: the finest S2 level (16: about 150 m)")
	minLevel := flag.Int("min-level", 0, "moving users: the shallowest S2 level (0: the shard depth's, shard depth - 1; shallower is refused)")
	toOwner := flag.Bool("to-owner", false, "moving users: send each operation to the node owning its cell's shard, as a client that knows the owners would (not how plain clients connect)")
	ahead := flag.Int("ahead", 320, "moving users: operations handed to connections and not yet answered, across all (bench/loadgen Config.Ahead; 0: unbounded)")
	rate := flag.Float64("rate", 0, "moving users: send the operations open loop at this many per second, the same offered load for both systems (0: closed loop, each as fast as it goes)")
	flag.StringVar(&nodeFlags, "node-flags", "", "more broker flags for the cluster's nodes, space-separated (e.g. \"--shard-depth 11\": the moving workload and the shares follow a --shard-depth or --shard-groups there)")
	flag.IntVar(&nodeProcs, "node-procs", shareOfCores(), "GOMAXPROCS of each of the cluster's nodes: by default this machine's cores shared among the three (at least 1), as three machines would give each its own; 0: the Go runtime's default, every core for every node (one node always has the default)")
	rounds := flag.Int("rounds", 1, "measure one node and then the cluster this many times, each on fresh processes, and report the median ratio (the machine's speed drifts within minutes)")
	idleFor := flag.Duration("idle", 0, "instead of a workload, measure three idle nodes' CPU over this long, after 20 s to settle")
	flag.Parse()
	if nodeProcs > 0 {
		fmt.Printf("cluster nodes: GOMAXPROCS=%d each (-node-procs)\n", nodeProcs)
	}
	if *idleFor > 0 {
		if err := idle(*bin, *idleFor, 20*time.Second, *keep); err != nil {
			fmt.Fprintln(os.Stderr, "clusterbench:", err)
			os.Exit(1)
		}
		return
	}
	fmt.Printf("one node: GOMAXPROCS=%d, the Go runtime's default\n", runtime.GOMAXPROCS(0))
	shards := layout(strings.Fields(nodeFlags))
	if err := shards.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "clusterbench: -node-flags:", err)
		os.Exit(2)
	}
	var measureOn func([]*procs.Node) (result, error)
	switch *kind {
	case "cells":
		w, err := newWorkload(*subs, *pubs, *seed, shards)
		if err != nil {
			fmt.Fprintln(os.Stderr, "clusterbench:", err)
			os.Exit(1)
		}
		fmt.Printf("%d subscriptions, %d publications, %d notifications owed\n", *subs, *pubs, w.owed)
		measureOn = func(nodes []*procs.Node) (result, error) { return measure(nodes, w, *conns, *window) }
	case "moving":
		w, err := movingUsers(*ops, *seed, *life, *rate, shards, *minLevel, *level)
		if err != nil {
			fmt.Fprintln(os.Stderr, "clusterbench:", err)
			os.Exit(2)
		}
		loop := "closed loop"
		if *rate > 0 {
			loop = fmt.Sprintf("open loop at %.0f per second", *rate)
		}
		fmt.Printf("moving users: 10000 users, %d operations, 3 subscriptions per publication, S2 levels %d to %d, %s\n", *ops,
			w.minLevel, w.level, loop)
		measureOn = func(nodes []*procs.Node) (result, error) {
			return measureMoving(nodes, w.ops, shards, *seed, *ahead, *rate == 0, *toOwner)
		}
	default:
		fmt.Fprintf(os.Stderr, "clusterbench: -workload %q: use cells or moving\n", *kind)
		os.Exit(2)
	}
	if *rounds < 1 {
		fmt.Fprintln(os.Stderr, "clusterbench: -rounds must be at least 1")
		os.Exit(2)
	}
	if err := run(*bin, measureOn, *keep, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "clusterbench:", err)
		os.Exit(1)
	}
}

type result struct {
	seconds, cpu float64
	got, owed    int64 // notifications (live and past results)
	live         int64 // of got, live notifications (moving users)
	refused      int64 // publishes refused overloaded (retried in the cells workload, dropped in moving)
	natsMsgs     float64
	natsKinds    map[string]float64 // per publication, by kind
	elections    int64              // stream leader elections during the run
	nodes        []nodeShare        // a cluster's: each node's share
}

// prepare makes the run's directory and builds the broker there unless
// bin names one; done removes the directory unless keep.
func prepare(bin string, keep bool) (dir, broker string, done func(), err error) {
	if dir, done, err = procs.WorkDir("clusterbench", keep); err != nil {
		return "", "", nil, err
	}
	if broker, err = procs.Broker(bin, dir); err != nil {
		done()
		return "", "", nil, err
	}
	return dir, broker, done, nil
}

func run(bin string, measure func([]*procs.Node) (result, error), keep bool, rounds int) error {
	dir, bin, done, err := prepare(bin, keep)
	if err != nil {
		return err
	}
	defer done()
	// The per-connection rate limit (2,000 requests/s by default) would
	// refuse the closed loop of a fast node: this prices the path, not
	// admission.
	args := []string{"--rate", "1000000"}
	if profileDir != "" {
		args = append(args, "--pprof")
	}
	var ratios []float64
	for i := range rounds {
		if rounds > 1 {
			fmt.Printf("round %d of %d\n", i+1, rounds)
		}
		rdir := filepath.Join(dir, fmt.Sprint("round", i+1))
		one, err := single(bin, filepath.Join(rdir, "single"), args...)
		if err != nil {
			return err
		}
		a, err := measure(one)
		stopAll(one)
		if err != nil {
			return err
		}
		c, err := startNodes(bin, filepath.Join(rdir, "cluster"), args...)
		if err != nil {
			return err
		}
		// At rest: not amid the rebalance that follows the nodes' start.
		if err := procs.Settle(c.Nodes, layout(strings.Fields(nodeFlags))); err != nil {
			c.Stop()
			return err
		}
		b, err := measure(c.Nodes)
		c.Stop()
		if err != nil {
			return err
		}
		ratios = append(ratios, report(a, b))
		profileDir = "" // the first round's profiles only
	}
	if rounds > 1 {
		fmt.Printf("cluster / one node over %d rounds: %s, median %.2fx\n", rounds, formatRatios(ratios), median(ratios))
	}
	return nil
}

// report prints a round's results and returns its ratio of the cluster's
// CPU per notification to one node's.
func report(a, b result) float64 {
	for _, x := range []struct {
		name string
		r    result
	}{{"one node", a}, {"three nodes", b}} {
		fmt.Printf("%-12s %8.0f notifications/s, %6.2f CPU-s per million notifications, %d of %d owed arrived, %.1f NATS messages between nodes per publication\n",
			x.name, float64(x.r.got)/x.r.seconds, x.r.cpu/float64(x.r.got)*1e6, x.r.got, x.r.owed, x.r.natsMsgs)
		if x.r.refused > 0 {
			fmt.Printf("%-12s %d publishes refused overloaded\n", "", x.r.refused)
		}
		if x.r.live > 0 {
			fmt.Printf("%-12s %d live notifications and %d past results\n", "", x.r.live, x.r.got-x.r.live)
		}
	}
	fmt.Printf("NATS messages between nodes per publication, by kind:")
	for _, m := range messageKinds {
		fmt.Printf(" %s %.2f", m, b.natsKinds[m])
	}
	fmt.Println()
	fmt.Printf("stream leader elections during the cluster's run: %d\n", b.elections)
	if len(b.nodes) > 0 {
		fmt.Printf("three nodes, deliveries by node: %s\n", formatShares(b.nodes))
	}
	ratio := (b.cpu / float64(b.got)) / (a.cpu / float64(a.got))
	fmt.Printf("cluster / one node, CPU per notification: %.2fx\n", ratio)
	return ratio
}

// median of xs, which it sorts.
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

func formatRatios(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("%.2fx", x)
	}
	return strings.Join(s, ", ")
}

// single starts one broker process, as a Node of its own.
func single(bin, dir string, args ...string) ([]*procs.Node, error) {
	var addrs [2]string
	for i := range addrs {
		a, err := procs.FreeAddr()
		if err != nil {
			return nil, err
		}
		addrs[i] = a
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	n := &procs.Node{ID: "single", HTTP: addrs[0], NATS: addrs[1], Dir: dir}
	n.Cmd = exec.Command(bin, append([]string{"--data", dir, "--http", n.HTTP, "--nats-listen", n.NATS}, args...)...)
	logPath := dir + ".log" // beside its data directory
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer log.Close() // the process has its own copy
	n.Cmd.Stdout, n.Cmd.Stderr = log, log
	if err := n.Cmd.Start(); err != nil {
		return nil, err
	}
	if err := procs.WaitReady(n.HTTP); err != nil {
		procs.Stop(n.Cmd)
		return nil, fmt.Errorf("one node: %w; the end of its log:\n%s", err, procs.Tail(logPath, 5))
	}
	return []*procs.Node{n}, nil
}

func stopAll(nodes []*procs.Node) {
	for _, n := range nodes {
		procs.Stop(n.Cmd)
	}
}
