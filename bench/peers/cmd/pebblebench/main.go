// Command pebblebench runs the thesis's flat-grid experiments (Fig.
// 4.8–4.11) on Cellcast's DualDB and on DualDB's layout over Pebble
// (bench/peers/pebbledual), one after the other in this process, and
// writes results.csv, the SVG figures and report.md into -out. See
// docs/benchmarks.md.
//
//	cd bench/peers && go run ./cmd/pebblebench
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/seed84792017/cellcast/bench/experiments"
	"github.com/seed84792017/cellcast/bench/peers/pebbledual"
	"github.com/seed84792017/cellcast/listdb"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "pebblebench:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		scale  = flag.String("scale", "1", `a multiple of the default 400,000 operations per workload, or "full" (37.5×: the thesis's 15M)`)
		only   = flag.String("only", "4.8,4.9", "comma-separated figures to run (of 4.8–4.11)")
		out    = flag.String("out", "bench-results-pebble", "directory for results.csv, the SVG figures and report.md")
		chunks = flag.Int("chunks", 10, "report the mean time per operation over this many chunks of each run")
	)
	flag.Parse()
	k, err := experiments.ParseScale(*scale)
	if err != nil {
		return err
	}
	if *chunks < 1 {
		return fmt.Errorf("-chunks %d: want at least 1", *chunks)
	}
	openers := map[string]experiments.Opener{
		"dualdb": experiments.Openers(nil)["dualdb"],
		// The same memory as DualDB's default budget: 128 MiB of cache.
		"pebble dualdb": func(dir string, cfg listdb.Config) (experiments.Store, func(int64) error, error) {
			s, err := pebbledual.Open(dir, cfg, listdb.DefaultCacheBudget)
			return s, nil, err
		},
	}
	want := map[string]bool{}
	for _, f := range strings.Split(*only, ",") {
		want[strings.TrimSpace(f)] = true
	}
	var results []*experiments.Result
	for _, s := range experiments.Setups(k) {
		if !want[s.Figure] {
			continue
		}
		if s.Workload.Space != "grid" {
			return fmt.Errorf("figure %s: only the flat-grid figures 4.8–4.11 run here", s.Figure)
		}
		s.Stores = []string{"dualdb", "pebble dualdb"}
		for _, name := range s.Stores {
			r, err := experiments.Run(s, name, openers[name], max(1, s.Workload.Ops / *chunks))
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "Fig. %s %s %s: %.2f µs/op (SUBSCRIBE %.2f, PUBLISH %.2f)\n", s.Figure, s.Name, name, r.Mean, r.SubMean, r.PubMean)
			results = append(results, r)
		}
	}
	return experiments.WriteResults(*out, results, map[string]string{
		"4.8":  "Target (issue): our DualDB at least 1.5× as fast as the Pebble-backed one on this subscription-heavy workload",
		"4.9":  "No target; the thesis's workload with publications dominating",
		"4.10": "No target; self-joins",
		"4.11": "No target; self-joins, publications dominating",
	})
}
