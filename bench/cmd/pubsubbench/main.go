// Command pubsubbench reproduces the in-process experiments of thesis
// Fig. 4.8–4.12 on Cellcast's storage architectures: SUBSCRIBE/PUBLISH mixes
// on the 500×500 grid over New York (±10 s windows, 20 s expiry), simple and
// self-join, subscription-heavy (3:1) and publication-heavy (1:3), and the
// quad tree (depth 5, deeper levels likelier) with variable against fixed
// granularity. It prints mean µs per operation for every million operations
// as a markdown table.
//
// Time is simulated: the broker clock advances 10 µs per operation (100k
// operations per second), so the live data set is that of a broker at that
// rate whatever this machine's speed.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed84792017/cellcast/bench/repqueries"
	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/dualdb"
	"github.com/seed84792017/cellcast/internal/procstat"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/lsm"
	"github.com/seed84792017/cellcast/lsm/sstable"
	"github.com/seed84792017/cellcast/subscriptions"
	"github.com/seed84792017/cellcast/twodb"
)

var (
	ops        = flag.Int("ops", 2_000_000, "operations per run")
	only       = flag.String("only", "", "run only workloads whose name contains this")
	onlyStore  = flag.String("store", "", "run only stores whose name contains this")
	tr         = flag.Duration("tr", time.Second, "RepQueries re-query period T_R")
	tick       = flag.Duration("tick", 10*time.Microsecond, "simulated time per operation")
	chunk      = flag.Int("chunk", 1_000_000, "report a mean every this many operations")
	cpuprofile = flag.String("cpuprofile", "", "write a CPU profile here")
	traceOut   = flag.String("trace", "", "write a runtime execution trace here")
	blockprof  = flag.String("blockprofile", "", "write a profile of where clients wait (locks, channels) here")
	cacheMiB   = flag.Int("cache-mib", 0, "block cache per engine in MiB (0: a share of the store's default budget)")
	memMiB     = flag.Int("memtable-mib", 0, "memtable size per engine in MiB (0: a share of the store's default budget)")
	blockSize  = flag.Int("block-size", 0, "target table block size in bytes (0: the engine default)")
	noSnappy   = flag.Bool("no-snappy", false, "store table blocks uncompressed")
	clients    = flag.Int("clients", 1, "concurrent clients issuing the operations (1 reproduces the thesis's single-threaded runs)")
	metrics    = flag.Bool("metrics", false, "print each engine's metrics to stderr after a run")
)

type store interface {
	Subscribe(context.Context, *subscriptions.SubscribeRequest) (*subscriptions.SubscribeResult, error)
	Publish(context.Context, *subscriptions.PublishRequest) (*subscriptions.PublishResult, error)
	Close() error
}

type workload struct {
	name       string
	subsPerPub float64
	selfJoin   bool
	quad       bool // quad tree depth 5 instead of the grid
	stores     []string
	// scale divides -ops and -chunk: operations high in the tree scan and
	// return a large part of all live data, so these runs are costly.
	scale int
}

var workloads = []workload{
	{"simple sub-heavy 3:1", 3, false, false, []string{"dualdb", "twodb", "repqueries"}, 1},
	{"simple pub-heavy 1:3", 1.0 / 3, false, false, []string{"dualdb", "twodb", "repqueries"}, 1},
	{"self-join sub-heavy 3:1", 3, true, false, []string{"dualdb", "twodb"}, 1},
	{"self-join pub-heavy 1:3", 1.0 / 3, true, false, []string{"dualdb", "twodb"}, 1},
	{"quad tree d=5 sub-heavy 3:1", 3, false, true, []string{"dualdb variable", "dualdb fixed"}, 20},
}

// open opens a store and, for stores that re-query on a schedule, the tick
// to call after each operation (nil otherwise).
func open(name, dir string, clock *subscriptions.FakeClock, tree *dewey.QuadTree) (store, func(int64) error, error) {
	cfg := listdb.Config{Clock: clock, Now: clock.Peek}
	switch name {
	case "dualdb", "dualdb variable":
		s, err := dualdb.Open(dir, cfg, engineOptions())
		return s, nil, err
	case "dualdb fixed":
		cfg.Granularity, cfg.Tree, cfg.LeafDepth = listdb.Fixed, tree, 5
		s, err := dualdb.Open(dir, cfg, engineOptions())
		return s, nil, err
	case "twodb":
		s, err := twodb.Open(dir, cfg, engineOptions())
		return s, nil, err
	case "repqueries":
		s, err := repqueries.Open(dir, cfg, engineOptions(), *tr)
		if err != nil {
			return nil, nil, err
		}
		return s, func(now int64) error { return s.Tick(context.Background(), now) }, nil
	}
	return nil, nil, fmt.Errorf("unknown store %q", name)
}

// engineOptions applies the tuning flags.
func engineOptions() *lsm.Options {
	o := &lsm.Options{BlockCacheSize: int64(*cacheMiB) << 20, MemTableSize: int64(*memMiB) << 20, BlockSize: *blockSize}
	if *noSnappy {
		o.Compression = sstable.NoCompression
	}
	return o
}

// cellSource draws operation cells: uniform points, mapped to the grid or to
// the quad tree at a depth where level i of 5 has probability ∝ 2^i.
type cellSource struct {
	rng  *rand.Rand
	grid *dewey.Grid
	tree *dewey.QuadTree
	quad bool
}

func (c *cellSource) next() subscriptions.Cell {
	b := dewey.NewYorkState
	lat := b.MinLat + c.rng.Float64()*(b.MaxLat-b.MinLat)
	lng := b.MinLng + c.rng.Float64()*(b.MaxLng-b.MinLng)
	if !c.quad {
		id, _ := c.grid.Cell(lat, lng)
		return subscriptions.Cell{NS: subscriptions.NSCell, ID: id}
	}
	// P(depth = i) ∝ 1/2^(5−i) for i = 1…5.
	r := c.rng.Float64() * 31
	depth, w := 5, 16.0
	for depth > 1 && r >= w {
		r -= w
		depth--
		w /= 2
	}
	id, _ := c.tree.Cell(lat, lng, depth)
	return subscriptions.Cell{NS: subscriptions.NSCell, ID: id}
}

var users = func() []string {
	u := make([]string, 100_000)
	for i := range u {
		u[i] = "user" + strconv.Itoa(i)
	}
	return u
}()

// run returns the mean µs per operation of each chunk and the resident set
// size in MiB at the end, with the store still open.
func run(w workload, name string, tree *dewey.QuadTree, grid *dewey.Grid) ([]float64, float64, error) {
	dir, err := os.MkdirTemp("", "pubsubbench")
	if err != nil {
		return nil, 0, err
	}
	defer os.RemoveAll(dir)
	clock := subscriptions.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	st, tickFn, err := open(name, dir, clock, tree)
	if err != nil {
		return nil, 0, err
	}
	defer st.Close()
	nops, nchunk := int64(*ops/w.scale), int64(*chunk/w.scale)
	var (
		done  atomic.Int64
		mu    sync.Mutex // guards means, mark and tickFn
		means []float64
		mark  = time.Now()
		errs  = make(chan error, *clients)
	)
	client := func(seed int64) error {
		ctx := context.Background()
		cells := &cellSource{rng: rand.New(rand.NewSource(seed)), grid: grid, tree: tree, quad: w.quad}
		pSub := w.subsPerPub / (1 + w.subsPerPub)
		sub := &subscriptions.SubscribeRequest{Uid: "u", Past: 10 * time.Second, Future: 10 * time.Second, SelfJoin: w.selfJoin}
		pub := &subscriptions.PublishRequest{Uid: "p", Expires: 20 * time.Second, Desc: "accident on the thruway", SelfJoin: w.selfJoin}
		for {
			i := done.Add(1)
			if i > nops {
				return nil
			}
			clock.Advance(*tick)
			// 100k users, so self-joins see realistic per-user histories.
			uid := users[cells.rng.Intn(len(users))]
			var err error
			if cells.rng.Float64() < pSub {
				sub.Uid = uid
				sub.Cell = cells.next()
				_, err = st.Subscribe(ctx, sub)
			} else {
				pub.Uid = uid
				pub.Cell = cells.next()
				_, err = st.Publish(ctx, pub)
			}
			if err == nil && tickFn != nil {
				mu.Lock()
				err = tickFn(clock.Peek())
				mu.Unlock()
			}
			if i%nchunk == 0 || i == nops {
				n := i % nchunk
				if n == 0 {
					n = nchunk
				}
				mu.Lock()
				means = append(means, float64(time.Since(mark).Microseconds())/float64(n))
				mark = time.Now()
				mu.Unlock()
			}
			if err != nil {
				return err
			}
		}
	}
	for c := 0; c < *clients; c++ {
		go func() { errs <- client(int64(c + 1)) }()
	}
	for c := 0; c < *clients; c++ {
		if e := <-errs; e != nil && err == nil {
			err = e
		}
	}
	if err != nil {
		return nil, 0, err
	}
	if b, ok := st.(interface{ Backend() listdb.Backend }); ok && *metrics {
		for _, m := range b.Backend().Metrics() {
			fmt.Fprintf(os.Stderr, "%s %s:\n%s\n", w.name, name, m)
		}
	}
	return means, procstat.RSSMiB(), nil
}

func main() {
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if *traceOut != "" {
		f, err := os.Create(*traceOut)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		trace.Start(f)
		defer trace.Stop()
	}
	if *blockprof != "" {
		runtime.SetBlockProfileRate(1000) // one sample per µs blocked
		defer func() {
			f, err := os.Create(*blockprof)
			if err == nil {
				err = pprof.Lookup("block").WriteTo(f, 0)
				f.Close()
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}()
	}
	grid, _ := dewey.NewGrid(dewey.NewYorkState, 500, 500)
	tree, _ := dewey.NewQuadTree(dewey.NewYorkState, 5)
	fmt.Printf("%d operations per run (quad tree runs: 1/20 of that) from %d client(s), simulated clock %v per operation; mean wall-clock µs/op per %d operations (1/20 for the quad tree).\n\n", *ops, *clients, *tick, *chunk)
	fmt.Println("| workload | store | µs/op per chunk | overall µs/op | ops/s | vs first store | RSS MiB |")
	fmt.Println("|---|---|---|---:|---:|---:|---:|")
	for _, w := range workloads {
		if *only != "" && !strings.Contains(w.name, *only) {
			continue
		}
		var first float64
		for _, name := range w.stores {
			if *onlyStore != "" && !strings.Contains(name, *onlyStore) {
				continue
			}
			means, rss, err := run(w, name, tree, grid)
			if err != nil {
				fmt.Fprintln(os.Stderr, "pubsubbench:", w.name, name, err)
				os.Exit(1)
			}
			var sum float64
			parts := make([]string, len(means))
			for j, m := range means {
				sum += m
				parts[j] = fmt.Sprintf("%.1f", m)
			}
			overall := sum / float64(len(means))
			if first == 0 {
				first = overall
			}
			fmt.Printf("| %s | %s | %s | %.2f | %.0f | %.2f× | %.0f |\n", w.name, name, strings.Join(parts, " "), overall, 1e6/overall, overall/first, rss)
		}
	}
}
