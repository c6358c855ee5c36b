package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/seed84792017/cellcast/bench/loadgen"
	"github.com/seed84792017/cellcast/bench/procs"
	"github.com/seed84792017/cellcast/bench/workload"
	"github.com/seed84792017/cellcast/cluster"
)

// The rolling mode (issue 39): a cluster's nodes restarted one after
// another, and the cluster grown and shrunk, under load, losing nothing.
//
// It starts three nodes and runs the load generator against them in
// phases, one run each, each run checked by the load generator's oracle:
//
//   - restart: n1, n2 and n3 in turn stopped with SIGTERM (the broker
//     hands its shards over) and started again on their data and
//     addresses;
//   - growth: n4, then n5 added, naming the others' routes; the shards
//     rebalance onto them;
//   - kill (optional): the node serving most of the workload killed with
//     SIGKILL and started again;
//   - shrink: n1, then n5 stopped with SIGTERM and removed for good
//     (cellcast remove-node): n1's replica of every log moves to n4 or
//     n5, then n5's to n4.
//
// A phase gives each of its n steps a span of the run, and the run lasts
// n+1 spans: step k (from 1) starts (k-1/2) spans into it, and not before
// the cluster has settled after the previous one (every shard owned, none
// by a node over its fair share), which leaves a span and a half after
// the last one for the cluster to settle under load.
// The clients connect to the nodes there are when a phase starts, each
// falling back on the others: in the growth phase the added nodes serve
// them as shards' owners, in the kill phase as their nodes too.

// rollingPast is the workload's past window; the phases' runs are this
// far apart (and a second more), so that no run's subscriptions find
// the publications of the one before as past results, which its oracle
// would not know.
const rollingPast = 5 * time.Second

// step is one change to the cluster during a phase.
type step struct {
	name string
	do   func(*stepTimes) error
}

// stepTimes is when a step started, when its node went down (stop or
// kill returned), when the cluster had it back or had it (the node
// ready), and when the cluster had settled after it; seconds since the
// phase's run began.
type stepTimes struct {
	name                       string
	start, down, ready, settle float64
	t0                         time.Time
}

func (s *stepTimes) at(t time.Time) float64 { return t.Sub(s.t0).Seconds() }

// phaseResult is a phase's report, for the summary.
type phaseResult struct {
	name  string
	rep   *loadgen.Report
	steps []stepTimes
	// take is the phase's slowest shard take, of takes in all.
	take  time.Duration
	takes int
}

// rollingRun starts three nodes of bin (built when empty) and runs the
// phases at rate operations a second, each step given stepSpan of the
// run; with kill, the kill phase too.
func rollingRun(bin string, keep bool, rate float64, stepSpan time.Duration, kill bool, args []string) error {
	dir, done, err := procs.WorkDir("rolling", keep)
	if err != nil {
		return err
	}
	defer done()
	if bin, err = procs.Broker(bin, dir); err != nil {
		return err
	}
	c, err := procs.StartCluster(bin, dir, 3, args...)
	if err != nil {
		return err
	}
	defer c.Stop()
	if err := procs.Settle(c.Nodes, cluster.Shards{}); err != nil {
		return err
	}
	restart := func(i int) step {
		return step{"SIGTERM and restart " + c.Nodes[i].ID, func(st *stepTimes) error {
			if err := c.StopNode(i, 40*time.Second); err != nil {
				return err
			}
			st.down = st.at(time.Now())
			return c.Restart(i)
		}}
	}
	remove := func(i int) step {
		return step{"SIGTERM " + c.Nodes[i].ID + " and remove it", func(st *stepTimes) error {
			if err := c.StopNode(i, 40*time.Second); err != nil {
				return err
			}
			st.down = st.at(time.Now())
			return c.Remove(i, 30*time.Second)
		}}
	}
	add := step{"add a node", func(st *stepTimes) error {
		nd, err := c.Add()
		if err == nil {
			st.name = "add " + nd.ID
		}
		return err
	}}
	phases := []struct {
		name  string
		steps []step
	}{
		{"restart", []step{restart(0), restart(1), restart(2)}},
		{"growth", []step{add, add}},
	}
	if kill {
		phases = append(phases, struct {
			name  string
			steps []step
		}{"kill", []step{{"SIGKILL and restart the busiest node", nil}}})
	}
	phases = append(phases, struct {
		name  string
		steps []step
	}{"shrink", nil}) // n4 and n5 are there once the growth ran
	var results []phaseResult
	for k, ph := range phases {
		if k > 0 {
			time.Sleep(rollingPast + time.Second)
		}
		if ph.name == "shrink" {
			// n1 holds a replica of every log, n5 of those moved to it.
			ph.steps = []step{remove(0), remove(4)}
		}
		span := time.Duration(len(ph.steps)+1) * stepSpan
		g, err := workload.New(workload.Config{Seed: int64(k + 1), Ops: int(rate * span.Seconds()), Users: 2000, Rate: rate,
			Space: workload.S2, MinLevel: cluster.DefaultShardDepth - 1, Past: rollingPast, Future: time.Minute, Expires: time.Minute})
		if err != nil {
			return err
		}
		all := g.All()
		if ph.name == "kill" {
			victim, share, err := busiest(c, all)
			if err != nil {
				return err
			}
			ph.steps[0] = step{fmt.Sprintf("SIGKILL and restart %s (serving %.0f%%)", c.Nodes[victim].ID, 100*share), func(st *stepTimes) error {
				if err := c.Kill(victim); err != nil {
					return err
				}
				st.down = st.at(time.Now())
				return c.Restart(victim)
			}}
		}
		// The clients connect to every node running when the phase
		// starts: the kill phase's reach the nodes the growth added, and
		// the shrink's lose them.
		var urls []string
		for _, nd := range running(c) {
			urls = append(urls, nd.WS())
		}
		r, err := phase(c, ph.name, urls, all, span, ph.steps, int64(k+1))
		if err != nil {
			return fmt.Errorf("phase %s: %w", ph.name, err)
		}
		results = append(results, r)
	}
	if err := c.LogsPlaced(3, time.Minute); err != nil {
		return fmt.Errorf("after the shrink, the logs' replicas: %w", err)
	}
	fmt.Println("rolling: every phase's notifications and past results owed arrived exactly once; every log on three current replicas of the nodes left")
	for _, r := range results {
		worst := 0.0
		if len(r.rep.LongestGaps) > 0 {
			worst = r.rep.LongestGaps[0].Ms / 1000
		}
		fmt.Printf("  %-8s longest gap without a reply in any shard %.1f s; %s; slowest of %d shard takes %v\n", r.name, worst,
			gapList(r.rep.LongestGaps, r.steps), r.takes, r.take.Round(time.Millisecond))
	}
	return nil
}

// phase runs the load generator on ops (their offsets spanning span)
// against urls and, meanwhile, steps, each at its share of the run and
// after the cluster settled from the one before; then checks the
// oracle's completeness and prints the phase's figures.
func phase(c *procs.Cluster, name string, urls []string, ops []workload.Op, span time.Duration, steps []step, seed int64) (phaseResult, error) {
	type outcome struct {
		times []stepTimes
		err   error
	}
	t0 := time.Now()
	ran := make(chan outcome, 1)
	stop := make(chan struct{})
	go func() {
		var times []stepTimes
		for k, s := range steps {
			select {
			case <-time.After(time.Until(t0.Add(span * time.Duration(2*k+1) / time.Duration(2*len(steps)+2)))):
			case <-stop:
				ran <- outcome{times, errors.New("the run ended before step " + s.name)}
				return
			}
			if err := procs.Settle(running(c), cluster.Shards{}); err != nil {
				ran <- outcome{times, fmt.Errorf("before step %s: %w", s.name, err)}
				return
			}
			st := stepTimes{name: s.name, t0: t0}
			st.start = st.at(time.Now())
			if err := s.do(&st); err != nil {
				ran <- outcome{times, fmt.Errorf("step %s: %w", s.name, err)}
				return
			}
			st.ready = st.at(time.Now())
			times = append(times, st)
		}
		if err := procs.Settle(running(c), cluster.Shards{}); err != nil {
			ran <- outcome{times, fmt.Errorf("after the last step: %w", err)}
			return
		}
		times[len(times)-1].settle = times[len(times)-1].at(time.Now())
		ran <- outcome{times, nil}
	}()
	rep, err := loadgen.Run(context.Background(), loadgen.Config{WSURLs: urls, Ops: ops, Conns: 6, PubConns: 3,
		Window: 16, Shard: shardOf, Seed: seed})
	close(stop)
	out := <-ran
	if err != nil {
		return phaseResult{}, err
	}
	if out.err != nil {
		return phaseResult{}, out.err
	}
	// A step must begin under load; one that ends after it (a restarted
	// node slow to rejoin on a loaded machine) is told, not failed.
	if last := out.times[len(out.times)-1].start; last > span.Seconds() {
		return phaseResult{}, fmt.Errorf("the last step began %.1f s into the run, after its last operation (%.1f s): give each step more time (-step)",
			last, span.Seconds())
	}
	if last := out.times[len(out.times)-1].ready; last > span.Seconds() {
		fmt.Printf("phase %s: the last step was done %.1f s into the run, after its last operation (%.1f s) (-step: more time)\n",
			name, last, span.Seconds())
	}
	if last := out.times[len(out.times)-1].settle; last > span.Seconds() {
		fmt.Printf("phase %s: the cluster settled %.1f s into the run, after its last operation (%.1f s): the end of the rebalance was not under load (-step: more time)\n",
			name, last, span.Seconds())
	}
	comp := rep.Completeness
	var ev []string
	for _, st := range out.times {
		e := fmt.Sprintf("%s at %.1f s", st.name, st.start)
		if st.down > 0 {
			e += fmt.Sprintf(", down at %.1f s", st.down)
		}
		e += fmt.Sprintf(", ready at %.1f s", st.ready)
		ev = append(ev, e)
	}
	fmt.Printf("phase %s: %s; settled at %.1f s; %d ops over %.0f s; %d subscribes and %d publishes acknowledged, errors %v; "+
		"%d live notifications and %d past results owed, %d notifications of unanswered publications; longest gaps without a reply: %s\n",
		name, strings.Join(ev, "; "), out.times[len(out.times)-1].settle, len(ops), span.Seconds(), rep.Subscribes, rep.Publishes, rep.Errors,
		comp.ExpectedLive, comp.ExpectedPast, comp.FromUnanswered, gapList(rep.LongestGaps, out.times))
	if !comp.OK() {
		return phaseResult{}, fmt.Errorf("completeness: %d missing, %d twice, %d unexpected: %s", comp.Missing, comp.Duplicates,
			comp.Unexpected, strings.Join(comp.Examples, "; "))
	}
	if comp.ExpectedLive == 0 || comp.ExpectedPast == 0 {
		return phaseResult{}, fmt.Errorf("a run that proves nothing: %+v", comp)
	}
	take, takes := slowestTake(c, t0, time.Now())
	return phaseResult{name, rep, out.times, take, takes}, nil
}

// running is the nodes whose processes run.
func running(c *procs.Cluster) []*procs.Node {
	var out []*procs.Node
	for _, nd := range c.Nodes {
		if nd.Running() {
			out = append(out, nd)
		}
	}
	return out
}

// gapList renders gaps, each with the step it ended after.
func gapList(gaps []loadgen.Gap, steps []stepTimes) string {
	var out []string
	for _, gp := range gaps {
		after := "before the first step"
		for _, st := range steps {
			if gp.EndS >= st.start {
				after = "after " + st.name
			}
		}
		out = append(out, fmt.Sprintf("%s %.1f s (ended %.1f s in, %s)", gp.Shard, gp.Ms/1000, gp.EndS, after))
	}
	return strings.Join(out, "; ")
}
