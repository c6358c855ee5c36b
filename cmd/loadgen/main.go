// Command loadgen drives a running broker with a moving-user workload and
// checks that nothing was lost. See bench/loadgen and docs/benchmarks.md.
//
//	go run ./cmd/broker &
//	go run ./cmd/loadgen -ops 24000 -rate 600 -drop-connections
//
// The workload comes from -trace, or is generated from the flags (and can
// be saved with -write-trace). The report goes to standard output as JSON;
// a progress line goes to standard error every second. The exit status is
// 1 when the run failed to complete (any notification missing, repeated
// or unexpected).
//
// Cells are the broker's world grid by default (-space s2): each
// operation on the S2 cell of its user's point, at a level from
// -min-level (10, about 10 km) to -level (16, about 150 m, the broker's
// --geo-level), the deeper likelier. -space grid, quad (with -depth) and
// circle are the thesis's maps of New York, whose Dewey ids a broker
// accepts but which name no place on the grid.
//
// Against a cluster, -shard-depth is the cluster's --shard-depth (Dewey
// components: S2 level + 1; the broker's default is 10) and -shard-groups
// its --shard-groups: every cell then lies at or below the shard depth
// (-min-level is raised to shard depth − 1 if shallower), so each
// operation is stamped in one shard as the oracle needs; self-joins are
// refused; and the report gives gaps and deliveries per shard (g1 … gN).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/seed84792017/cellcast/bench/loadgen"
	"github.com/seed84792017/cellcast/bench/procs"
	"github.com/seed84792017/cellcast/bench/workload"
	"github.com/seed84792017/cellcast/cluster"
	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/subscriptions"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(2)
	}
}

func run() error {
	var (
		broker      = flag.String("broker", "127.0.0.1:8080", "the broker's HTTP address (for /ws and /metrics); a cluster's nodes separated by commas (connections spread over them, /metrics from the first)")
		shardDepth  = flag.Int("shard-depth", 0, "a cluster's --shard-depth (Dewey components, S2 level + 1; the broker's default is 10): every cell at or below it, no self-joins, gaps and deliveries reported per shard (0: one broker)")
		shardGroups = flag.Int("shard-groups", cluster.DefaultShardGroups, "a cluster's --shard-groups, to name the shards of -shard-depth")
		natsURL     = flag.String("nats", "nats://127.0.0.1:4222", "publish over this NATS server (empty: over WebSocket)")
		tracePath   = flag.String("trace", "", "replay this trace file instead of generating")
		writeTrace  = flag.String("write-trace", "", "save the workload to this trace file")
		reportPath  = flag.String("json", "", "write the JSON report here as well as to standard output")
		closed      = flag.Bool("closed", false, "closed loop: as fast as replies come, -window in flight per connection")
		slowdown    = flag.Float64("slowdown", 1, "open loop: stretch the schedule by this factor")
		conns       = flag.Int("conns", 16, "subscriber WebSocket connections")
		pubConns    = flag.Int("pubconns", 4, "publisher connections")
		window      = flag.Int("window", 64, "requests in flight per connection")
		ahead       = flag.Int("ahead", 0, "closed loop: at most this many operations handed out and unanswered across all connections, which keeps them in the workload's order (0: no bound)")
		dropConns   = flag.Bool("drop-connections", false, "cut random subscriber connections (every -drop-every, 2s if unset) and resume them; completeness must still hold")
		dropEvery   = flag.Duration("drop-every", 0, "cut a random subscriber connection this often and resume it (0: never)")
		quiet       = flag.Bool("quiet", false, "no progress lines")
		cpuProfile  = flag.String("cpuprofile", "", "write the load generator's own CPU profile here (it shares the machine with the broker)")

		seed     = flag.Int64("seed", 1, "workload seed")
		ops      = flag.Int("ops", 100_000, "operations")
		users    = flag.Int("users", 10_000, "moving users")
		ratio    = flag.Float64("ratio", 1, "subscriptions per publication (3: subscription-heavy, 0.333: publication-heavy)")
		rate     = flag.Float64("rate", 5000, "operations per second (the schedule)")
		space    = flag.String("space", "s2", "s2 (the broker's world grid), or the thesis's grid, quad or circle")
		level    = flag.Int("level", workload.DefaultS2Level, "s2: the finest S2 level, where moves are told and the deepest cells lie (up to 30; 16: about 150 m)")
		minLevel = flag.Int("min-level", workload.DefaultS2MinLevel, "s2: the shallowest S2 level, level i drawn ∝ 1/2^(level−i) (10: about 10 km)")
		depth    = flag.Int("depth", 8, "quad: tree depth")
		radius   = flag.Float64("radius", 2000, "circle: R in metres")
		selfJoin = flag.Float64("self-join", 0, "share of self-join operations")
		past     = flag.Duration("past", 10*time.Second, "past window of every subscription")
		future   = flag.Duration("future", 10*time.Second, "future window of every subscription")
		expires  = flag.Duration("expires", 20*time.Second, "lifetime of every publication")
	)
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: loadgen [flags]\n\nDrives a running broker (open mode, on loopback) and checks completeness.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	if *dropConns && *dropEvery == 0 {
		*dropEvery = 2 * time.Second
	}
	cfg := workload.Config{Seed: *seed, Ops: *ops, Users: *users, SubsPerPub: *ratio, Rate: *rate, Space: workload.Space(*space),
		Depth: *depth, Radius: *radius, SelfJoin: *selfJoin, Past: *past, Future: *future, Expires: *expires}
	layout := cluster.Shards{Depth: *shardDepth, Groups: *shardGroups}
	if err := layout.Validate(); *shardDepth != 0 && err != nil {
		return fmt.Errorf("-shard-depth, -shard-groups: %w", err)
	}
	if err := levels(&cfg, *level, *minLevel, *shardDepth); err != nil {
		return err
	}
	opsList, err := load(*tracePath, cfg)
	if err != nil {
		return err
	}
	if err := fitsShards(opsList, *shardDepth); err != nil {
		return err
	}
	brokers := strings.Split(*broker, ",")
	var wsURLs []string
	for _, b := range brokers {
		wsURLs = append(wsURLs, "ws://"+strings.TrimSpace(b)+"/ws")
	}
	if *writeTrace != "" {
		if err := save(*writeTrace, opsList, fmt.Sprintf("%+v", cfg)); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	lc := loadgen.Config{WSURLs: wsURLs, NATSURL: *natsURL, MetricsURL: "http://" + strings.TrimSpace(brokers[0]) + "/metrics",
		Ops: opsList, Closed: *closed, Slowdown: *slowdown, Conns: *conns, PubConns: *pubConns, Window: *window, Ahead: *ahead,
		DropEvery: *dropEvery, Seed: *seed}
	if *shardDepth != 0 {
		lc.Shard = func(cell dewey.ID) string {
			return layout.Home([]subscriptions.Cell{{NS: subscriptions.NSCell, ID: cell}})
		}
	}
	if !*quiet {
		lc.Progress = os.Stderr
	}
	if *cpuProfile != "" {
		stop, err := procs.ProfileCPU(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	rep, err := loadgen.Run(ctx, lc)
	if err != nil {
		return err
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	b = append(b, '\n')
	os.Stdout.Write(b)
	if *reportPath != "" {
		if err := os.WriteFile(*reportPath, b, 0o644); err != nil {
			return err
		}
	}
	if !rep.Completeness.OK() {
		fmt.Fprintf(os.Stderr, "loadgen: INCOMPLETE: %d missing, %d duplicates, %d unexpected:\n  %s\n", rep.Completeness.Missing,
			rep.Completeness.Duplicates, rep.Completeness.Unexpected, strings.Join(rep.Completeness.Examples, "\n  "))
		os.Exit(1)
	}
	return nil
}

// levels sets the workload's levels from the flags: the s2 space's S2
// levels, and for a cluster the shallowest level at the shard depth (a
// quad tree's levels count Dewey components, an S2 level one fewer).
func levels(cfg *workload.Config, level, minLevel, shardDepth int) error {
	switch cfg.Space {
	case workload.S2:
		if level < 1 {
			return fmt.Errorf("-level %d: use 1 to 30", level)
		}
		if shardDepth > 0 && level < shardDepth-1 {
			return fmt.Errorf("-shard-depth %d puts every cell at S2 level %d or deeper, below -level %d", shardDepth, shardDepth-1, level)
		}
		cfg.Level, cfg.MinLevel = level, max(minLevel, shardDepth-1)
	case workload.Quad:
		cfg.MinLevel = shardDepth
	}
	return nil
}

// fitsShards checks that a cluster can answer the oracle's questions: a
// cell above the shard depth is stamped in every geo shard (a
// publication's reply names one stamp, its subscribers elsewhere get
// others), and a self-join subscription lives in g0, which stamps the
// publications it gets apart from their home shard. At or below the depth, a subscription
// and the publications it overlaps meet in one shard, under one stamp.
func fitsShards(ops []workload.Op, depth int) error {
	if depth == 0 {
		return nil
	}
	for i := range ops {
		switch op := &ops[i]; {
		case op.SelfJoin:
			return fmt.Errorf("-shard-depth: operation %d is a self-join, which a cluster serves from g0 under stamps of g0's own", i)
		case len(op.Cell) < depth:
			return fmt.Errorf("-shard-depth: operation %d is on cell %v, above the shard depth %d (use -space s2)", i, op.Cell, depth)
		}
	}
	return nil
}

func load(path string, cfg workload.Config) ([]workload.Op, error) {
	if path == "" {
		g, err := workload.New(cfg)
		if err != nil {
			return nil, err
		}
		return g.All(), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := workload.NewTraceReader(f)
	if err != nil {
		return nil, err
	}
	var ops []workload.Op
	for op, ok := r.Next(); ok; op, ok = r.Next() {
		ops = append(ops, op)
	}
	return ops, r.Err()
}

func save(path string, ops []workload.Op, comment string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := workload.NewTraceWriter(f, comment)
	for i := range ops {
		if err := w.Write(&ops[i]); err != nil {
			f.Close()
			return err
		}
	}
	return errors.Join(w.Flush(), f.Close())
}
