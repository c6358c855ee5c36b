// Command dbbench runs db_bench-style workloads on Cellcast's lsm, Pebble v2
// and goleveldb in one process and writes a markdown table of ops/s, space
// on disk and write amplification.
//
// Defaults follow db_bench: 1M keys of 16 bytes, 100-byte values that
// compress to half, WAL on without fsync, snappy, 10 bits/key bloom filters,
// and the same block cache for every engine.
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"time"
)

var (
	num         = flag.Int("num", 1_000_000, "keys per workload")
	valueSize   = flag.Int("value_size", 100, "value size in bytes")
	mergeKeys   = flag.Int("merge_keys", 100_000, "distinct keys for mergerandom")
	cacheMiB    = flag.Int64("cache_mib", 32, "block cache per engine, MiB")
	only        = flag.String("engines", "cellcast,pebble,goleveldb", "engines to run")
	dir         = flag.String("dir", "", "scratch directory (default: a temp dir)")
	out         = flag.String("out", "", "also write the markdown report here")
	workloadsF  = flag.String("workloads", "", "comma-separated subset of workloads (default all)")
	memprofile  = flag.String("memprofile", "", "write an allocation profile at the end here")
	verbose     = flag.Bool("v", false, "print engine metrics after each workload")
	syncWriters = flag.Int("sync_writers", 8, "concurrent writers in fillsync")
	runs        = flag.Int("runs", 1, "run every engine this many times, interleaved, and keep each workload's best")
	cpuprofile  = flag.String("cpuprofile", "", "write a CPU profile of the whole run here")
)

type result struct {
	opsPerSec float64
	note      string
}

type engineResult struct {
	name     string
	results  map[string]result
	spaceOW  int64
	spaceCmp int64
	liveOW   float64
	liveCmp  float64
	wamp     float64
}

var workloadOrder = []string{
	"fillseq", "fillsync", "fillrandom", "overwrite", "readrandom", "readmissing", "seekrandom",
	"readseq", "compact", "readrandom-compacted", "mergerandom", "readmerged", "readmerged-compacted",
}

func main() {
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fatal(err)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	scratch := *dir
	if scratch == "" {
		var err error
		if scratch, err = os.MkdirTemp("", "dbbench"); err != nil {
			fatal(err)
		}
		defer os.RemoveAll(scratch)
	}
	want := map[string]bool{}
	for _, w := range strings.Split(*workloadsF, ",") {
		if w != "" {
			want[w] = true
		}
	}
	var all []engineResult
	for run := 0; run < *runs; run++ {
		i := 0
		for _, spec := range engines {
			if !strings.Contains(","+*only+",", ","+spec.name+",") {
				continue
			}
			fmt.Fprintf(os.Stderr, "== %s (run %d)\n", spec.name, run+1)
			r, err := runEngine(spec, filepath.Join(scratch, spec.name), want)
			if err != nil {
				fatal(fmt.Errorf("%s: %w", spec.name, err))
			}
			if run == 0 {
				all = append(all, r)
			} else {
				all[i].keepBest(r)
			}
			i++
			runtime.GC()
		}
	}
	if *memprofile != "" {
		f, err := os.Create(*memprofile)
		if err != nil {
			fatal(err)
		}
		pprof.Lookup("allocs").WriteTo(f, 0)
		f.Close()
	}
	report := header() + render(all)
	fmt.Print(report)
	if *out != "" {
		if err := os.WriteFile(*out, []byte(report), 0o644); err != nil {
			fatal(err)
		}
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "dbbench:", err)
	os.Exit(1)
}

// valueGen hands out values that compress to about half, like db_bench's
// CompressibleString: each piece is random bytes repeated once.
type valueGen struct {
	data []byte
	pos  int
}

func newValueGen(rng *rand.Rand) *valueGen {
	g := &valueGen{}
	for len(g.data) < 1<<20 {
		piece := make([]byte, 50)
		for i := range piece {
			piece[i] = byte(' ' + rng.IntN(95))
		}
		g.data = append(g.data, piece...)
		g.data = append(g.data, piece...)
	}
	return g
}

func (g *valueGen) next(n int) []byte {
	if g.pos+n > len(g.data) {
		g.pos = 0
	}
	v := g.data[g.pos : g.pos+n]
	g.pos += n
	return v
}

func key(buf []byte, prefix byte, i int) []byte {
	buf = append(buf[:0], prefix)
	return fmt.Appendf(buf, "%015d", i)
}

func dirSize(path string) int64 {
	var n int64
	filepath.Walk(path, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			n += info.Size()
		}
		return nil
	})
	return n
}

func timed(n int, fn func(i int) error) (result, error) {
	start := time.Now()
	for i := 0; i < n; i++ {
		if err := fn(i); err != nil {
			return result{}, err
		}
	}
	return result{opsPerSec: float64(n) / time.Since(start).Seconds()}, nil
}

// timedConcurrent runs n calls of fn over w goroutines.
func timedConcurrent(n, w int, fn func(i int) error) (result, error) {
	start := time.Now()
	var next atomic.Int64
	errs := make(chan error, w)
	for range w {
		go func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					errs <- nil
					return
				}
				if err := fn(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var first error
	for range w {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return result{opsPerSec: float64(n) / time.Since(start).Seconds()}, first
}

func runEngine(spec engineSpec, path string, want map[string]bool) (engineResult, error) {
	res := engineResult{name: spec.name, results: map[string]result{}, wamp: math.NaN(), liveOW: math.NaN(), liveCmp: math.NaN()}
	rng := rand.New(rand.NewPCG(1, 2))
	vals := newValueGen(rng)
	cache := *cacheMiB << 20
	n := *num
	kb := make([]byte, 0, 32)
	var e engine
	run := func(name string, ops int, fn func(i int) error) error {
		if len(want) > 0 && !want[name] {
			return nil
		}
		r, err := timed(ops, fn)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if prev, ok := res.results[name]; ok && prev.note != "" {
			r.note = prev.note
		}
		res.results[name] = r
		fmt.Fprintf(os.Stderr, "%-22s %12.0f ops/s %s\n", name, r.opsPerSec, r.note)
		if *verbose {
			switch e := e.(type) {
			case *cellcastEngine:
				fmt.Fprintln(os.Stderr, e.db.Metrics())
			case *pebbleEngine:
				fmt.Fprintln(os.Stderr, e.db.Metrics())
			}
		}
		return nil
	}
	note := func(name, s string) {
		r := res.results[name]
		r.note = s
		res.results[name] = r
	}

	// fillseq on its own DB.
	os.RemoveAll(path)
	var err error
	e, err = spec.open(path, cache)
	if err != nil {
		return res, err
	}
	if err := run("fillseq", n, func(i int) error { return e.set(key(kb, 'k', i), vals.next(*valueSize)) }); err != nil {
		return res, err
	}
	e.close()
	os.RemoveAll(path)

	// fillsync: db_bench's num/100 writes, each fsynced, from several
	// writers at once, on its own DB: what group commit is for.
	if len(want) == 0 || want["fillsync"] {
		if e, err = spec.open(path, cache); err != nil {
			return res, err
		}
		m := max(n/100, 1)
		r, err := timedConcurrent(m, *syncWriters, func(i int) error {
			k := fmt.Appendf(nil, "k%015d", i)
			return e.setSync(k, k)
		})
		if err != nil {
			return res, fmt.Errorf("fillsync: %w", err)
		}
		r.note = fmt.Sprintf("%d writers", *syncWriters)
		res.results["fillsync"] = r
		fmt.Fprintf(os.Stderr, "%-22s %12.0f ops/s %s\n", "fillsync", r.opsPerSec, r.note)
		e.close()
		os.RemoveAll(path)
	}

	if e, err = spec.open(path, cache); err != nil {
		return res, err
	}
	defer e.close()
	steps := []struct {
		name string
		ops  int
		fn   func(i int) error
	}{
		{"fillrandom", n, func(int) error { return e.set(key(kb, 'k', rng.IntN(n)), vals.next(*valueSize)) }},
		{"overwrite", n, func(int) error { return e.set(key(kb, 'k', rng.IntN(n)), vals.next(*valueSize)) }},
	}
	for _, s := range steps {
		if err := run(s.name, s.ops, s.fn); err != nil {
			return res, err
		}
	}
	res.spaceOW, res.liveOW = dirSize(path), e.liveBytes()
	found := 0
	readRandom := func(int) error {
		ok, err := e.get(key(kb, 'k', rng.IntN(n)))
		if ok {
			found++
		}
		return err
	}
	if err := run("readrandom", n, readRandom); err != nil {
		return res, err
	}
	note("readrandom", fmt.Sprintf("%d%% found", found*100/max(n, 1)))
	missing := 0
	if err := run("readmissing", n, func(int) error {
		ok, err := e.get(append(key(kb, 'k', rng.IntN(n)), '.'))
		if !ok {
			missing++
		}
		return err
	}); err != nil {
		return res, err
	}
	seen := 0
	if err := run("seekrandom", n, func(int) error {
		c, err := e.seek(key(kb, 'k', rng.IntN(n)), 10)
		seen += c
		return err
	}); err != nil {
		return res, err
	}
	scanned := 0
	if err := run("readseq", 1, func(int) error {
		c, err := e.scan()
		scanned = c
		return err
	}); err != nil {
		return res, err
	}
	if r, ok := res.results["readseq"]; ok {
		r.opsPerSec *= float64(scanned)
		r.note = fmt.Sprintf("%d keys", scanned)
		res.results["readseq"] = r
	}
	if err := run("compact", 1, func(int) error { return e.compact() }); err != nil {
		return res, err
	}
	if r, ok := res.results["compact"]; ok {
		r.note = fmt.Sprintf("%.1f s", 1/r.opsPerSec)
		res.results["compact"] = r
	}
	res.spaceCmp, res.liveCmp = dirSize(path), e.liveBytes()
	found = 0
	if err := run("readrandom-compacted", n, readRandom); err != nil {
		return res, err
	}
	res.wamp = e.writeAmp()

	mk := *mergeKeys
	if err := run("mergerandom", n, func(int) error {
		err := e.merge(key(kb, 'm', rng.IntN(mk)), vals.next(*valueSize))
		if err == errUnsupported {
			return errSkip
		}
		return err
	}); err != nil && !isSkip(err) {
		return res, err
	} else if isSkip(err) {
		res.results["mergerandom"] = result{note: "no merge operator"}
		return res, nil
	}
	// A few keys may never have been merged (1M draws over 100k keys miss
	// about e^-10 of them), so count rather than require hits.
	mergedFound := 0
	readMerged := func(int) error {
		ok, err := e.get(key(kb, 'm', rng.IntN(mk)))
		if ok {
			mergedFound++
		}
		return err
	}
	if err := run("readmerged", n, readMerged); err != nil {
		return res, err
	}
	if _, ran := res.results["readmerged"]; ran && mergedFound < n*99/100 {
		return res, fmt.Errorf("readmerged found only %d of %d lists", mergedFound, n)
	}
	if err := e.compact(); err != nil {
		return res, err
	}
	if err := run("readmerged-compacted", n, readMerged); err != nil {
		return res, err
	}
	return res, nil
}

// keepBest keeps each workload's higher throughput and the newer run's
// space and write-amplification figures.
func (e *engineResult) keepBest(o engineResult) {
	for w, r := range o.results {
		if r.opsPerSec > e.results[w].opsPerSec {
			e.results[w] = r
		}
	}
	e.spaceOW, e.spaceCmp, e.liveOW, e.liveCmp, e.wamp = o.spaceOW, o.spaceCmp, o.liveOW, o.liveCmp, o.wamp
}

func header() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				cpu = strings.TrimSpace(line[strings.IndexByte(line, ':')+1:])
				break
			}
		}
	}
	return fmt.Sprintf("Measured %s on %d cores (%s), %s; `dbbench %s`: %d keys of 16 B, %d-byte values "+
		"compressible to half, WAL without fsync, snappy, 10 bits/key bloom filters, %d MiB block cache each, "+
		"best of %d interleaved run(s).\n\n",
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), cpu, runtime.Version(),
		strings.Join(os.Args[1:], " "), *num, *valueSize, *cacheMiB, *runs)
}

var errSkip = fmt.Errorf("skip")

func isSkip(err error) bool { return err != nil && strings.Contains(err.Error(), "skip") }

func render(all []engineResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| workload |")
	for _, e := range all {
		fmt.Fprintf(&b, " %s ops/s |", e.name)
	}
	ratios := len(all) > 1 && all[0].name == "cellcast"
	if ratios {
		for _, e := range all[1:] {
			fmt.Fprintf(&b, " cellcast / %s |", e.name)
		}
	}
	fmt.Fprintf(&b, "\n|---|")
	for range all {
		fmt.Fprintf(&b, "---:|")
	}
	if ratios {
		for range all[1:] {
			fmt.Fprintf(&b, "---:|")
		}
	}
	fmt.Fprintln(&b)
	for _, w := range workloadOrder {
		if w == "compact" {
			continue
		}
		fmt.Fprintf(&b, "| %s |", w)
		for _, e := range all {
			r := e.results[w]
			if r.opsPerSec == 0 {
				fmt.Fprintf(&b, " n/a %s |", r.note)
				continue
			}
			fmt.Fprintf(&b, " %.0f |", r.opsPerSec)
		}
		if ratios {
			base := all[0].results[w].opsPerSec
			for _, e := range all[1:] {
				if o := e.results[w].opsPerSec; o > 0 && base > 0 {
					fmt.Fprintf(&b, " %.2f× |", base/o)
				} else {
					fmt.Fprintf(&b, " — |")
				}
			}
		}
		fmt.Fprintln(&b)
	}
	row := func(label string, f func(e engineResult) string) {
		fmt.Fprintf(&b, "| %s |", label)
		for _, e := range all {
			fmt.Fprintf(&b, " %s |", f(e))
		}
		if ratios {
			for range all[1:] {
				fmt.Fprintf(&b, " |")
			}
		}
		fmt.Fprintln(&b)
	}
	row("full compaction time", func(e engineResult) string { return e.results["compact"].note })
	row("space after overwrite (MiB)", func(e engineResult) string { return fmt.Sprintf("%.1f", float64(e.spaceOW)/(1<<20)) })
	row("space after compact (MiB)", func(e engineResult) string { return fmt.Sprintf("%.1f", float64(e.spaceCmp)/(1<<20)) })
	mib := func(v float64) string {
		if math.IsNaN(v) {
			return "n/a"
		}
		return fmt.Sprintf("%.1f", v/(1<<20))
	}
	row("live tables after overwrite (MiB)", func(e engineResult) string { return mib(e.liveOW) })
	row("live tables after compact (MiB)", func(e engineResult) string { return mib(e.liveCmp) })
	row("write amplification", func(e engineResult) string {
		if math.IsNaN(e.wamp) {
			return "n/a"
		}
		return fmt.Sprintf("%.2f", e.wamp)
	})
	return b.String()
}
