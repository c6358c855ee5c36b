// Command failover measures how long a Cellcast cluster's shards go
// unserved when a node is killed: it starts three broker processes,
// and for each round kills one with SIGKILL while publishing into every
// geo shard through the other nodes, and reports the time from the kill
// until every shard answers again; the killed node is then restarted.
// Then it runs the load generator (bench/loadgen) against all three nodes
// and kills one a third of the way through: the generator's oracle checks
// that every acknowledged operation was answered for, and its longest
// gaps without a reply, per shard, are the failover as clients saw it.
//
// Probes and load are on the world grid over New York, at or below the
// default shard depth (S2 level 9 and deeper): one probe cell in each of
// the 16 geo shards (a publication is stored in g0 too), and the moving
// users of bench/workload's s2 space at S2 levels 9 to 16.
//
// With -external-nats the brokers embed no NATS server: they share a
// cluster of three nats-server processes (docs/cluster.md), and a kill
// takes a broker alone, so no raft group loses its leader.
//
// With -rolling it instead restarts the three nodes one after another
// with SIGTERM, adds a fourth and a fifth, kills one, and stops the two
// added for good, each phase under the load generator, whose oracle
// checks it (rolling.go).
//
//	go run ./bench/cmd/failover [-broker BIN] [-rounds 6] [-load-ops 6000 -load-rate 300] [-external-nats [-nats-server BIN]]
//	go run ./bench/cmd/failover -rolling [-load-rate 300] [-step 12s] [-no-kill]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/seed84792017/cellcast/bench/procs"
	"github.com/seed84792017/cellcast/client"
	"github.com/seed84792017/cellcast/cluster"
	"github.com/seed84792017/cellcast/geo"
)

func main() {
	bin := flag.String("broker", "", "broker binary (default: build ./cmd/broker)")
	rounds := flag.Int("rounds", 6, "kills, taking the nodes in turn")
	keep := flag.Bool("keep", false, "keep the nodes' data and logs")
	ops := flag.Int("load-ops", 6000, "operations of the load generator's run with a kill (0: no such run)")
	rate := flag.Float64("load-rate", 300, "operations per second of that run")
	external := flag.Bool("external-nats", false, "run the brokers on a cluster of three nats-server processes instead of embedded servers")
	natsBin := flag.String("nats-server", "", "nats-server binary for -external-nats (default: .tools/nats-server or $PATH)")
	rolling := flag.Bool("rolling", false, "instead: restart the three nodes one after another, add two, kill one, and remove the two added, under load (rolling.go)")
	stepSpan := flag.Duration("step", 12*time.Second, "with -rolling: the share of a phase's run each step is given")
	noKill := flag.Bool("no-kill", false, "with -rolling: no kill phase")
	brokerArgs := flag.String("broker-args", "", "more flags for every broker, space-separated: the levers, e.g. \"--lease-ttl 1s --cluster-election-timeout 500ms\"")
	flag.Parse()
	var err error
	if *rolling {
		err = rollingRun(*bin, *keep, *rate, *stepSpan, !*noKill, strings.Fields(*brokerArgs))
	} else {
		err = run(*bin, *rounds, *keep, *ops, *rate, *external, *natsBin, strings.Fields(*brokerArgs))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "failover:", err)
		os.Exit(1)
	}
}

// cells holds one cell over New York in each geo shard of the default
// layout (procs.StartCluster's): S2 cells at the shard depth, found on a
// 0.1° lattice over the state, in the order the lattice meets them. A
// publication on one is stored in its shard and in the overflow shard g0,
// so the probes reach every geo shard.
var cells = sync.OnceValue(func() []string {
	var out []string
	seen := map[string]bool{}
	for lat := 40.6; lat < 45; lat += 0.1 {
		for lng := -79.7; lng < -71.9; lng += 0.1 {
			id, err := geo.PointCell(lat, lng, cluster.DefaultShardDepth-1)
			if err != nil {
				panic(err) // the lattice is on the map
			}
			if s := shardOf(id); !seen[s] {
				seen[s] = true
				out = append(out, id.String())
			}
		}
	}
	if len(out) != cluster.DefaultShardGroups {
		panic(fmt.Sprintf("New York's cells reach %d geo shards of %d", len(out), cluster.DefaultShardGroups))
	}
	return out
})

// run measures; with external, on a cluster of natsBin servers.
func run(bin string, rounds int, keep bool, loadOps int, loadRate float64, external bool, natsBin string, args []string) error {
	dir, done, err := procs.WorkDir("failover", keep)
	if err != nil {
		return err
	}
	defer done()
	if bin, err = procs.Broker(bin, dir); err != nil {
		return err
	}
	var c *procs.Cluster
	if external {
		nc, nerr := procs.StartNATSCluster(natsBin, dir, 3)
		if nerr != nil {
			return nerr
		}
		defer nc.Stop()
		fmt.Printf("external NATS cluster: %s\n", nc.URL())
		c, err = procs.StartClusterOn(nc.URL(), bin, dir, 3, args...)
	} else {
		c, err = procs.StartCluster(bin, dir, 3, args...)
	}
	if err != nil {
		return err
	}
	defer c.Stop()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var took, takes []time.Duration
	for r := range rounds {
		victim := r % 3
		// Every shard answers before the kill, and the shards are spread
		// evenly: a node dies in a settled cluster, not amid a rebalance.
		if _, err := serveAll(c, victim, quiet, time.Minute); err != nil {
			return err
		}
		if err := procs.Settle(c.Nodes, cluster.Shards{}); err != nil {
			return err
		}
		t0 := time.Now()
		if err := c.Kill(victim); err != nil {
			return err
		}
		back, err := serveAll(c, victim, quiet, time.Minute)
		if err != nil {
			return fmt.Errorf("round %d: %w", r, err)
		}
		d := back.at.Sub(t0)
		took = append(took, d)
		take, k := slowestTake(c, t0, back.at)
		takes = append(takes, take)
		fmt.Printf("round %d: killed %s; every shard served again after %v (the last: %s; its last error: %v); %d shards taken, the slowest take %v\n",
			r, c.Nodes[victim].ID, d.Round(time.Millisecond), back.cell, back.err, k, take.Round(time.Millisecond))
		if err := c.Restart(victim); err != nil {
			return err
		}
	}
	if loadOps > 0 {
		if _, err := serveAll(c, -1, quiet, time.Minute); err != nil {
			return err
		}
		if err := procs.Settle(c.Nodes, cluster.Shards{}); err != nil {
			return err
		}
		time.Sleep(probeLife) // the load generator's oracle knows nothing of the probes
		if err := underLoad(c, loadOps, loadRate); err != nil {
			return err
		}
	}
	if len(took) == 0 {
		return nil
	}
	slices.Sort(took)
	slices.Sort(takes)
	over := len(took) - sort.Search(len(took), func(i int) bool { return took[i] > 5*time.Second })
	at := func(ds []time.Duration, q float64) time.Duration {
		return ds[int(q*float64(len(ds)-1))].Round(time.Millisecond)
	}
	fmt.Printf("failover over %d kills: min %v, median %v, p90 %v, max %v; over 5 s: %d\n", len(took), at(took, 0), at(took, 0.5), at(took, 0.9), at(took, 1), over)
	fmt.Printf("the slowest take of each kill (what a standby owner would save at most): median %v, p90 %v, max %v\n", at(takes, 0.5), at(takes, 0.9), at(takes, 1))
	return nil
}

// probeLife is how long a probe's publication lives.
const probeLife = time.Second

// served is when the last shard answered again: its probe's cell, and the
// error its previous try met.
type served struct {
	at   time.Time
	cell string
	err  error
}

// serveAll publishes into every shard through the nodes other than skip
// until each has answered, and returns when the last one first did.
func serveAll(c *procs.Cluster, skip int, log *slog.Logger, limit time.Duration) (served, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var mu sync.Mutex
	var last served
	var wg sync.WaitGroup
	errs := make(chan error, len(cells()))
	for i, cell := range cells() {
		node := c.Nodes[(skip+1+i%2)%3]
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := client.Dial(ctx, node.WS(), client.Options{UID: "failover", Log: log})
			if err != nil {
				errs <- err
				return
			}
			defer cl.Close()
			var prev error
			for ctx.Err() == nil {
				pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
				_, err := cl.Publish(pctx, client.PublishRequest{Location: client.Cell(cell), Expires: probeLife, Desc: "failover probe"})
				pcancel()
				if err == nil {
					mu.Lock()
					if now := time.Now(); now.After(last.at) {
						last = served{now, cell, prev}
					}
					mu.Unlock()
					return
				}
				prev = err
				time.Sleep(20 * time.Millisecond)
			}
			errs <- fmt.Errorf("shard of %s not served within %v", cell, limit)
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return served{}, err
	}
	return last, nil
}
