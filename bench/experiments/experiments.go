package experiments

import (
	"context"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/seed84792017/cellcast/bench/repqueries"
	"github.com/seed84792017/cellcast/bench/workload"
	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/dualdb"
	"github.com/seed84792017/cellcast/internal/procstat"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/lsm"
	"github.com/seed84792017/cellcast/subscriptions"
	"github.com/seed84792017/cellcast/twodb"
)

// Store is what an experiment drives.
type Store interface {
	Subscribe(context.Context, *subscriptions.SubscribeRequest) (*subscriptions.SubscribeResult, error)
	Publish(context.Context, *subscriptions.PublishRequest) (*subscriptions.PublishResult, error)
	Close() error
}

// An Opener opens a store in dir that stamps with clock. tick, when not
// nil, runs after every operation with the clock's time (RepQueries
// re-queries on a schedule).
type Opener func(dir string, cfg listdb.Config) (st Store, tick func(now int64) error, err error)

// Depth is the quad tree depth of the hierarchical experiments (the
// thesis's 5: root = level 1, leaves = level 5).
const Depth = 5

// Openers are this module's stores. Fixed granularity writes every
// operation at the quad tree's leaves.
func Openers(opts *lsm.Options) map[string]Opener {
	return map[string]Opener{
		"dualdb": func(dir string, cfg listdb.Config) (Store, func(int64) error, error) {
			s, err := dualdb.Open(dir, cfg, opts)
			return s, nil, err
		},
		"dualdb fixed": func(dir string, cfg listdb.Config) (Store, func(int64) error, error) {
			cfg.Granularity, cfg.LeafDepth = listdb.Fixed, Depth
			s, err := dualdb.Open(dir, cfg, opts)
			return s, nil, err
		},
		"twodb": func(dir string, cfg listdb.Config) (Store, func(int64) error, error) {
			s, err := twodb.Open(dir, cfg, opts)
			return s, nil, err
		},
		"repqueries": func(dir string, cfg listdb.Config) (Store, func(int64) error, error) {
			s, err := repqueries.Open(dir, cfg, opts, time.Second)
			if err != nil {
				return nil, nil, err
			}
			return s, func(now int64) error { return s.Tick(context.Background(), now) }, nil
		},
	}
}

// Setup is one workload of a figure, run on each of Stores.
type Setup struct {
	Figure   string // thesis figure, e.g. "4.8"
	Name     string
	X        string // for the bar figures (by level, by radius): this bar's label
	Workload workload.Config
	Stores   []string
}

// leafSideM is the side of a depth-5 leaf in metres: the thesis's R.
func leafSideM() float64 {
	b := dewey.NewYorkState
	return (b.MaxLat - b.MinLat) / math.Pow(2, Depth-1) * 111_320
}

// Setups are the experiments at a scale: scale 1 runs 400,000 operations
// per flat-grid workload and 10,000 per hierarchical one (2,000 per bar
// of Fig. 4.14 and 4.15); the thesis ran 15 million.
func Setups(scale float64) []Setup {
	flat := int(400_000 * scale)
	hier := int(10_000 * scale)
	grid := func(ratio, self float64) workload.Config {
		// 20k operations per second of broker time, whatever this
		// machine's speed: the live set (windows of 10–20 s) is full
		// after 400,000 operations.
		return workload.Config{Seed: 1, Ops: flat, Users: 100_000, SubsPerPub: ratio, SelfJoin: self, Space: workload.Grid, Rate: 20_000}
	}
	// The hierarchy runs at 500 operations per second, full after 10,000:
	// an operation at the root reads the whole live set, and with fixed
	// granularity writes it 256 times, so a faster broker would make these
	// runs take hours.
	quad := func() workload.Config {
		return workload.Config{Seed: 1, Ops: hier, Users: 10_000, SubsPerPub: 1, Space: workload.Quad, Depth: Depth, Rate: 500}
	}
	circle := func(times float64) workload.Config {
		c := quad()
		c.Space, c.Radius, c.RadiusTimes = workload.Circle, leafSideM(), times
		return c
	}
	all := []string{"dualdb", "twodb", "repqueries"}
	two := []string{"dualdb", "twodb"}
	gran := []string{"dualdb", "dualdb fixed"}
	s := []Setup{
		{Figure: "4.8", Name: "simple, subscription-heavy 3:1", Workload: grid(3, 0), Stores: all},
		{Figure: "4.9", Name: "simple, publication-heavy 1:3", Workload: grid(1.0/3, 0), Stores: all},
		{Figure: "4.10", Name: "self-join, subscription-heavy 3:1", Workload: grid(3, 1), Stores: two},
		{Figure: "4.11", Name: "self-join, publication-heavy 1:3", Workload: grid(1.0/3, 1), Stores: two},
		{Figure: "4.12", Name: "quad tree d=5, levels ∝ 1/2^(d−i)", Workload: quad(), Stores: gran},
		{Figure: "4.13", Name: "circles of radius 4R…R/4", Workload: circle(0), Stores: gran},
	}
	for level := 1; level <= Depth; level++ {
		c := quad()
		c.Level, c.Ops = level, hier/5
		s = append(s, Setup{Figure: "4.14", Name: "by level", X: fmt.Sprintf("level %d", level), Workload: c, Stores: gran})
	}
	for _, t := range []struct {
		times float64
		x     string
	}{{4, "4R"}, {2, "2R"}, {1, "R"}, {0.5, "R/2"}, {0.25, "R/4"}} {
		c := circle(t.times)
		c.Ops = hier / 5
		s = append(s, Setup{Figure: "4.15", Name: "by radius", X: t.x, Workload: c, Stores: gran})
	}
	return s
}

// Result is one store's run of one setup.
type Result struct {
	Setup  Setup
	Store  string
	Chunks []Chunk
	// Mean µs per operation over the whole run, and by kind.
	Mean, SubMean, PubMean float64
	RSSMiB                 float64
}

// Chunk is the mean time per operation over a run's consecutive
// operations.
type Chunk struct {
	Ops        int     // operations done at its end
	Mean       float64 // µs per operation in the chunk
	Cumulative float64 // seconds since the start
}

// Run runs s on the store opened by open, in a fresh directory, and
// reports the mean every chunk operations.
func Run(s Setup, name string, open Opener, chunk int) (*Result, error) {
	g, err := workload.New(s.Workload)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "experiments")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	clock := subscriptions.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	// One operation at a time, as in the thesis, whose LevelDB wrote
	// without sync: an fsync each would measure the disk, not the store.
	st, tick, err := open(dir, listdb.Config{Clock: clock, Now: clock.Peek, Durability: listdb.Buffered})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	ctx := context.Background()
	res := &Result{Setup: s, Store: name}
	sub := &subscriptions.SubscribeRequest{}
	pub := &subscriptions.PublishRequest{}
	var (
		at                 time.Duration
		subT, pubT, chunkT time.Duration
		subs, pubs, n      int
		total              time.Duration
	)
	for op, ok := g.Next(); ok; op, ok = g.Next() {
		clock.Advance(op.At - at)
		at = op.At
		c := subscriptions.Cell{NS: subscriptions.NSCell, ID: op.Cell}
		start := time.Now()
		if op.Kind == workload.Subscribe {
			*sub = subscriptions.SubscribeRequest{Uid: op.Uid, Cell: c, Past: op.Past, Future: op.Future, SelfJoin: op.SelfJoin}
			_, err = st.Subscribe(ctx, sub)
		} else {
			*pub = subscriptions.PublishRequest{Uid: op.Uid, Cell: c, Expires: op.Expires, Desc: op.Desc, SelfJoin: op.SelfJoin}
			_, err = st.Publish(ctx, pub)
		}
		if err == nil && tick != nil {
			err = tick(clock.Peek())
		}
		if err != nil {
			return nil, fmt.Errorf("%s on %s, operation %d: %w", s.Name, name, n, err)
		}
		d := time.Since(start)
		if op.Kind == workload.Subscribe {
			subT += d
			subs++
		} else {
			pubT += d
			pubs++
		}
		chunkT += d
		total += d
		if n++; n%chunk == 0 || n == s.Workload.Ops {
			k := n % chunk
			if k == 0 {
				k = chunk
			}
			res.Chunks = append(res.Chunks, Chunk{Ops: n, Mean: us(chunkT) / float64(k), Cumulative: total.Seconds()})
			chunkT = 0
		}
	}
	res.Mean = us(total) / float64(max(n, 1))
	res.SubMean = us(subT) / float64(max(subs, 1))
	res.PubMean = us(pubT) / float64(max(pubs, 1))
	res.RSSMiB = procstat.RSSMiB()
	return res, nil
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
