// Command clusterbench measures what the cluster path costs: the same
// workload against one broker and against a three-node cluster (three
// processes on this machine), in the same run, reporting the brokers'
// CPU-seconds per million notifications, NATS messages per operation,
// and that every notification owed arrived exactly once.
//
//	go run ./bench/cmd/clusterbench [-broker BIN] [-subs 4000] [-pubs 20000]
//	go run ./bench/cmd/clusterbench -workload moving [-ops 40000]
//
// The default workload (cells) subscribes first and then publishes, some
// publications above the shard depth: the cluster's hardest case, about 40
// notifications a publication. -workload moving runs the moving-user
// workload of the broker's other benchmarks through bench/loadgen;
// -to-owner sends each of its operations to the node owning its cell's
// shard, as a client that knew the owners would. -node-flags passes more
// flags to the cluster's nodes; -node-procs sets their GOMAXPROCS (by
// default the machine's cores shared among the three).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed84792017/cellcast/bench/procs"
	"github.com/seed84792017/cellcast/client"
	"github.com/seed84792017/cellcast/cluster"
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
	kind := flag.String("workload", "cells", "cells (subscriptions first, publications at depths 1-6) or moving (the moving-user workload)")
	ops := flag.Int("ops", 40000, "operations of the moving-user workload")
	life := flag.Duration("lifetime", 0, "the moving-user workload's windows and expiry (0: the workload's 10 s windows and 20 s expiry)")
	toOwner := flag.Bool("to-owner", false, "moving users: send each operation to the node owning its cell's shard (at the default shard depth 2), as a client that knows the owners would (not how plain clients connect)")
	ahead := flag.Int("ahead", 320, "moving users: operations handed to connections and not yet answered, across all (bench/loadgen Config.Ahead; 0: unbounded)")
	rate := flag.Float64("rate", 0, "moving users: send the operations open loop at this many per second, the same offered load for both systems (0: closed loop, each as fast as it goes)")
	flag.StringVar(&nodeFlags, "node-flags", "", "more broker flags for the cluster's nodes, space-separated (e.g. \"--shard-depth 3\")")
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
	var measureOn func([]*procs.Node) (result, error)
	switch *kind {
	case "cells":
		w := newWorkload(*subs, *pubs, *seed)
		fmt.Printf("%d subscriptions, %d publications, %d notifications owed\n", *subs, *pubs, w.owed)
		measureOn = func(nodes []*procs.Node) (result, error) { return measure(nodes, w, *conns, *window) }
	case "moving":
		w, err := movingUsers(*ops, *seed, *life, *rate)
		if err != nil {
			fmt.Fprintln(os.Stderr, "clusterbench:", err)
			os.Exit(1)
		}
		loop := "closed loop"
		if *rate > 0 {
			loop = fmt.Sprintf("open loop at %.0f per second", *rate)
		}
		fmt.Printf("moving users: 10000 users, %d operations, 3 subscriptions per publication, %s\n", *ops, loop)
		measureOn = func(nodes []*procs.Node) (result, error) {
			return measureMoving(nodes, w, *seed, *ahead, *rate == 0, *toOwner)
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

type cellsWorkload struct {
	subs, pubs []string // cells
	owed       int64
}

// newWorkload puts subscriptions at depth 6 and publications at depths
// 1 to 6, so some reach several shards and many subscribers.
func newWorkload(nsubs, npubs int, seed int64) *cellsWorkload {
	r := rand.New(rand.NewSource(seed))
	cell := func(depth int) string {
		p := make([]string, depth)
		for i := range p {
			p[i] = strconv.Itoa(1 + r.Intn(4))
		}
		return strings.Join(p, ".")
	}
	w := &cellsWorkload{}
	for range nsubs {
		w.subs = append(w.subs, cell(6))
	}
	for range npubs {
		d := 3 + r.Intn(4)
		if r.Intn(50) == 0 {
			d = 1
		}
		w.pubs = append(w.pubs, cell(d))
	}
	for _, s := range w.subs {
		for _, p := range w.pubs {
			if s == p || strings.HasPrefix(s, p+".") {
				w.owed++
			}
		}
	}
	return w
}

type result struct {
	seconds, cpu float64
	got, owed    int64 // notifications (live and past results)
	live         int64 // of got, live notifications (moving users)
	refused      int64 // publishes refused overloaded (retried in the cells workload, dropped in moving)
	natsMsgs     float64
	natsKinds    map[string]float64 // per publication, by kind
	elections    int64              // stream leader elections during the run
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
		if err := procs.Settle(c.Nodes, shardCount(strings.Fields(nodeFlags))); err != nil {
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

// cpuTotal is the CPU time of every node's process so far.
func cpuTotal(nodes []*procs.Node) (float64, error) {
	total := 0.0
	for _, n := range nodes {
		s, err := procs.CPUSeconds(n.Cmd.Process.Pid)
		if err != nil {
			return 0, err
		}
		total += s
	}
	return total, nil
}

// clusterMessages sums, over every node's /metrics, the NATS messages
// the nodes sent each other, by kind: requests, replies, notification
// batches and log appends.
func clusterMessages(nodes []*procs.Node) map[string]float64 {
	total := map[string]float64{}
	for _, n := range nodes {
		resp, err := http.Get("http://" + n.HTTP + "/metrics")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			for _, m := range messageKinds {
				if v, ok := strings.CutPrefix(line, "cellcast_cluster_"+m+"_total "); ok {
					f, _ := strconv.ParseFloat(v, 64)
					total[m] += f
				}
			}
		}
		resp.Body.Close()
	}
	return total
}

var messageKinds = []string{"requests", "replies", "notification_batches", "log_appends"}

func measure(nodes []*procs.Node, w *cellsWorkload, conns, window int) (result, error) {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var got atomic.Int64
	var clients []*client.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	dial := func(i int) (*client.Client, error) {
		c, err := client.Dial(ctx, nodes[i%len(nodes)].WS(), client.Options{UID: "bench", Log: quiet, PendingLimit: 1 << 20})
		if err == nil {
			clients = append(clients, c)
		}
		return c, err
	}
	for i := range conns {
		c, err := dial(i)
		if err != nil {
			return result{}, err
		}
		for k := i; k < len(w.subs); k += conns {
			_, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Cell(w.subs[k]), Future: 10 * time.Minute, Inline: true,
				Handler: func(client.Notification) { got.Add(1) }})
			if err != nil {
				return result{}, err
			}
		}
	}
	var pubConns []*client.Client
	for i := range len(nodes) * 2 {
		c, err := dial(i)
		if err != nil {
			return result{}, err
		}
		pubConns = append(pubConns, c)
	}
	m, err := startMeter(nodes)
	if err != nil {
		return result{}, err
	}
	var next, refusals atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, len(pubConns)*window)
	for _, c := range pubConns {
		for range window {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					k := int(next.Add(1)) - 1
					if k >= len(w.pubs) {
						return
					}
					for {
						_, err := c.Publish(ctx, client.PublishRequest{Location: client.Cell(w.pubs[k]), Expires: 10 * time.Minute, Desc: "bench"})
						var ce *client.Error
						if errors.As(err, &ce) && ce.Code == "overloaded" {
							refusals.Add(1) // back-pressure: nothing stored; retry as told
							time.Sleep(ce.RetryAfter)
							continue
						}
						if err != nil {
							errs <- err
							return
						}
						break
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return result{}, err
	}
	for deadline := time.Now().Add(2 * time.Minute); got.Load() < w.owed && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	secs, cpu, err := m.stop()
	if err != nil {
		return result{}, err
	}
	time.Sleep(500 * time.Millisecond) // anything beyond what is owed
	r := result{seconds: secs, cpu: cpu, got: got.Load(), owed: w.owed, refused: refusals.Load()}
	m.messages(&r, len(w.pubs))
	if r.got != r.owed {
		return r, fmt.Errorf("%d notifications arrived, %d owed", r.got, r.owed)
	}
	return r, nil
}

// meter measures the nodes over a run: its time, their CPU, the NATS
// messages between them and, for a cluster, the stream leader elections.
// Starting it also starts the profiles (-pprof).
type meter struct {
	nodes     []*procs.Node
	start     time.Time
	cpu0      float64
	msgs0     map[string]float64
	watch     *electionWatch // nil for one node
	elections int64
}

func startMeter(nodes []*procs.Node) (*meter, error) {
	cpu0, err := cpuTotal(nodes)
	if err != nil {
		return nil, err
	}
	m := &meter{nodes: nodes, cpu0: cpu0, msgs0: clusterMessages(nodes)}
	if len(nodes) > 1 {
		if m.watch, err = watchElections(nodes[0]); err != nil {
			return nil, err
		}
	}
	profile(nodes)
	m.start = time.Now()
	return m, nil
}

// stop returns the seconds since the start and the CPU-seconds spent.
func (m *meter) stop() (secs, cpu float64, err error) {
	secs = time.Since(m.start).Seconds()
	if m.watch != nil {
		m.elections = m.watch.stop()
	}
	cpu1, err := cpuTotal(m.nodes)
	return secs, cpu1 - m.cpu0, err
}

// messages fills r's NATS messages between nodes per publication, by
// kind and in all, since the start, and the elections stop counted.
func (m *meter) messages(r *result, publications int) {
	r.elections = m.elections
	msgs1 := clusterMessages(m.nodes)
	r.natsKinds = map[string]float64{}
	for _, k := range messageKinds {
		r.natsKinds[k] = (msgs1[k] - m.msgs0[k]) / float64(publications)
		r.natsMsgs += r.natsKinds[k]
	}
}

// profileDir, when set, receives CPU profiles of the brokers (-pprof),
// each profileFor long.
var (
	profileDir string
	profileFor time.Duration
)

// profile fetches a CPU profile of each node in the background, into
// profileDir as <node>.pprof.
func profile(nodes []*procs.Node) {
	if profileDir == "" {
		return
	}
	for _, n := range nodes {
		go func() {
			resp, err := http.Get("http://" + n.HTTP + "/debug/pprof/profile?seconds=" + fmt.Sprint(max(1, int(profileFor.Seconds()))))
			if err != nil {
				fmt.Fprintln(os.Stderr, "clusterbench: profile:", err)
				return
			}
			defer resp.Body.Close()
			f, err := os.Create(filepath.Join(profileDir, n.ID+".pprof"))
			if err == nil {
				io.Copy(f, resp.Body)
				f.Close()
			}
		}()
	}
}

// shardCount is how many shards the nodes run with flags: the broker's
// default shard groups unless --shard-groups says otherwise, the overflow
// shard and the topic shards.
func shardCount(flags []string) int {
	groups := 0
	for i, f := range flags {
		f = strings.TrimLeft(f, "-")
		v, ok := strings.CutPrefix(f, "shard-groups=")
		if f == "shard-groups" && i+1 < len(flags) {
			v, ok = flags[i+1], true
		}
		if g, err := strconv.Atoi(v); ok && err == nil {
			groups = g
		}
	}
	return len(cluster.Shards{Groups: groups}.All())
}
