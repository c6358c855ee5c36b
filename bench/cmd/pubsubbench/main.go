// Command pubsubbench reproduces the thesis's storage experiments (Fig.
// 4.8–4.15) on DualDB, TwoDB and RepQueries with the moving-user
// workloads of bench/workload, and writes results.csv, one SVG per figure
// and report.md into -out. See docs/storage-benchmarks.md.
//
//	go run ./bench/cmd/pubsubbench                  # about 5 minutes
//	go run ./bench/cmd/pubsubbench -scale full      # the thesis's 15M operations per workload
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/seed84792017/cellcast/bench/experiments"
	"github.com/seed84792017/cellcast/lsm"
	"github.com/seed84792017/cellcast/lsm/sstable"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "pubsubbench:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		scale      = flag.String("scale", "1", `a multiple of the default size (400,000 operations per flat workload, 10,000 per hierarchical one), or "full" (37.5×: the thesis's 15M)`)
		only       = flag.String("only", "", "run only figures whose number or name contains this")
		onlyStore  = flag.String("store", "", "run only stores whose name contains this")
		out        = flag.String("out", "bench-results", "directory for results.csv, the SVG figures and report.md")
		chunks     = flag.Int("chunks", 10, "report the mean time per operation over this many chunks of each run")
		cpuprofile = flag.String("cpuprofile", "", "write a CPU profile here")
		cacheMiB   = flag.Int("cache-mib", 0, "block cache per engine in MiB (0: a share of the store's default budget)")
		memMiB     = flag.Int("memtable-mib", 0, "memtable size per engine in MiB (0: a share of the store's default budget)")
		noSnappy   = flag.Bool("no-snappy", false, "store table blocks uncompressed")
	)
	flag.Parse()
	k, err := experiments.ParseScale(*scale)
	if err != nil {
		return err
	}
	if *chunks < 1 {
		return fmt.Errorf("-chunks %d: want at least 1", *chunks)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	o := &lsm.Options{BlockCacheSize: int64(*cacheMiB) << 20, MemTableSize: int64(*memMiB) << 20}
	if *noSnappy {
		o.Compression = sstable.NoCompression
	}
	openers := experiments.Openers(o)
	var results []*experiments.Result
	for _, s := range experiments.Setups(k) {
		if *only != "" && !strings.Contains(s.Figure+" "+s.Name, *only) {
			continue
		}
		for _, name := range s.Stores {
			if *onlyStore != "" && !strings.Contains(name, *onlyStore) {
				continue
			}
			r, err := experiments.Run(s, name, openers[name], max(1, s.Workload.Ops / *chunks))
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "Fig. %s %s %s %s: %.2f µs/op (SUBSCRIBE %.2f, PUBLISH %.2f)\n", s.Figure, s.Name, s.X, name, r.Mean, r.SubMean, r.PubMean)
			results = append(results, r)
		}
	}
	return experiments.WriteResults(*out, results, experiments.ThesisClaims)
}
