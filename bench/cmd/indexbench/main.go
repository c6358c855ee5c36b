// Command indexbench reproduces the secondary-index study (Qader et al.,
// SIGMOD 2018) at a scale that fits here, on every strategy of package
// secondary. A tweets-like data set: UserID skewed (a Zipf law, not
// time-correlated), CreationTime increasing (time-correlated), a text
// body. See docs/secondary-indexes.md.
//
// Static: load -n rows, then LOOKUP UserID with top-K 10, 100 and no
// limit, and RANGELOOKUP CreationTime at two selectivities. Mixed (only
// UserID indexed): write-heavy 80/15/5, read-heavy 20/70/10 and
// update-heavy 40/15/5/40 (PUT/GET/LOOKUP/update). It reports size on
// disk, mean PUT and LOOKUP times, blocks read per LOOKUP and compaction
// bytes, as markdown tables, results.csv and SVG plots in -out.
package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/seed84792017/cellcast/bench/experiments"
	"github.com/seed84792017/cellcast/secondary"
)

var strategies = []secondary.Strategy{secondary.Embedded, secondary.BloomHierarchy, secondary.Eager, secondary.Lazy, secondary.Composite, secondary.DELI}

var (
	n       = flag.Int("n", 100_000, "rows loaded")
	users   = flag.Int("users", 10_000, "distinct UserIDs")
	queries = flag.Int("queries", 1000, "lookups per measurement")
	mixedN  = flag.Int("mixed", 50_000, "operations per mixed workload")
	out     = flag.String("out", "bench-results-index", "directory for results.csv, the plots and report.md")
	seed    = flag.Int64("seed", 1, "data set seed")
)

// data draws rows.
type data struct {
	rng  *rand.Rand
	zipf *rand.Zipf
	t    int64
}

func newData(seed int64) *data {
	rng := rand.New(rand.NewSource(seed))
	// s = 1.1 with an offset of 20 users: a heavy head, not one user
	// holding a tenth of all rows.
	return &data{rng: rng, zipf: rand.NewZipf(rng, 1.1, 20, uint64(*users-1))}
}

func (d *data) user() string { return "u" + strconv.FormatUint(d.zipf.Uint64(), 10) }

func (d *data) row() secondary.Doc {
	d.t += int64(d.rng.Intn(3)) // 0–2 s apart: the seed set's rate, uniform
	body := make([]byte, 40+d.rng.Intn(100))
	for i := range body {
		body[i] = 'a' + byte(d.rng.Intn(26))
	}
	return secondary.Doc{"UserID": secondary.StringValue(d.user()), "CreationTime": secondary.IntValue(d.t), "body": secondary.StringValue(string(body))}
}

type result struct {
	strategy secondary.Strategy
	metric   string
	value    float64
}

func main() {
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fail(err)
	}
	var rs []result
	for _, s := range strategies {
		r, err := static(s)
		if err != nil {
			fail(fmt.Errorf("%s: %w", s, err))
		}
		rs = append(rs, r...)
	}
	for _, s := range strategies {
		for _, w := range mixes {
			r, err := mixed(s, w)
			if err != nil {
				fail(fmt.Errorf("%s %s: %w", s, w.name, err))
			}
			rs = append(rs, r...)
		}
	}
	if err := report(rs); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "indexbench:", err)
	os.Exit(1)
}

func open(s secondary.Strategy, attrs ...string) (*secondary.Table, func(), error) {
	dir, err := os.MkdirTemp("", "indexbench")
	if err != nil {
		return nil, nil, err
	}
	var as []secondary.Attr
	for _, a := range attrs {
		t := secondary.String
		if a == "CreationTime" {
			t = secondary.Int
		}
		as = append(as, secondary.Attr{Name: a, Type: t, Strategy: s})
	}
	tb, err := secondary.Open(dir, secondary.Config{Attrs: as})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return tb, func() { tb.Close(); os.RemoveAll(dir) }, nil
}

func ms(d time.Duration, n int) float64 {
	return float64(d) / float64(time.Millisecond) / float64(max(n, 1))
}

func static(s secondary.Strategy) ([]result, error) {
	tb, done, err := open(s, "UserID", "CreationTime")
	if err != nil {
		return nil, err
	}
	defer done()
	d := newData(*seed)
	start := time.Now()
	for i := range *n {
		if err := tb.Put(pk(i), d.row()); err != nil {
			return nil, err
		}
	}
	put := time.Since(start)
	if err := tb.Flush(); err != nil {
		return nil, err
	}
	m := tb.Metrics()
	rs := []result{
		{s, "PUT µs", float64(put.Microseconds()) / float64(*n)},
		{s, "size MiB", float64(m.DiskBytes) / (1 << 20)},
		{s, "compaction MiB", float64(m.CompactBytesOut) / (1 << 20)},
	}
	q := newData(*seed + 1)
	measure := func(name string, fn func() error) error {
		before := tb.Metrics()
		start := time.Now()
		for range *queries {
			if err := fn(); err != nil {
				return err
			}
		}
		el := time.Since(start)
		after := tb.Metrics()
		rs = append(rs, result{s, name + " ms", ms(el, *queries)},
			result{s, name + " blocks", float64(after.BlocksRead-before.BlocksRead) / float64(*queries)})
		if flat := after.FlatProbes - before.FlatProbes; flat > 0 {
			rs = append(rs, result{s, name + " filters probed, share of a flat scan", float64(after.HierarchyProbes-before.HierarchyProbes) / float64(flat)})
		}
		fmt.Fprintf(os.Stderr, "%s %s: %.3f ms\n", s, name, ms(el, *queries))
		return nil
	}
	for _, k := range []int{10, 100, 0} {
		if err := measure(fmt.Sprintf("LOOKUP UserID K=%d", k), func() error {
			_, err := tb.Lookup("UserID", secondary.StringValue(q.user()), k)
			return err
		}); err != nil {
			return nil, err
		}
	}
	// A rare value: a user drawn uniformly, most of whom have few rows.
	if err := measure("LOOKUP rare UserID K=0", func() error {
		_, err := tb.Lookup("UserID", secondary.StringValue("u"+strconv.Itoa(q.rng.Intn(*users))), 0)
		return err
	}); err != nil {
		return nil, err
	}
	span := d.t
	for _, sel := range []float64{0.0001, 0.001} {
		width := max(1, int64(float64(span)*sel))
		for _, k := range []int{100, 0} {
			name := fmt.Sprintf("RANGELOOKUP CreationTime %g%% K=%d", sel*100, k)
			if err := measure(name, func() error {
				a := q.rng.Int63n(max(1, span-width))
				_, err := tb.RangeLookup("CreationTime", secondary.IntValue(a), secondary.IntValue(a+width), k)
				return err
			}); err != nil {
				return nil, err
			}
		}
	}
	return rs, nil
}

type mix struct {
	name                      string
	put, get, lookup, updates int // percent
}

var mixes = []mix{
	{"write-heavy 80/15/5", 80, 15, 5, 0},
	{"read-heavy 20/70/10", 20, 70, 10, 0},
	{"update-heavy 40/15/5/40", 40, 15, 5, 40},
}

// mixed runs a mix on a table holding -n/4 rows, UserID alone indexed.
func mixed(s secondary.Strategy, w mix) ([]result, error) {
	tb, done, err := open(s, "UserID")
	if err != nil {
		return nil, err
	}
	defer done()
	d := newData(*seed)
	rows := *n / 4
	for i := range rows {
		if err := tb.Put(pk(i), d.row()); err != nil {
			return nil, err
		}
	}
	before := tb.Metrics()
	start := time.Now()
	for range *mixedN {
		x := d.rng.Intn(100)
		switch {
		case x < w.put:
			err = tb.Put(pk(rows), d.row())
			rows++
		case x < w.put+w.get:
			_, err = tb.Get(pk(d.rng.Intn(rows)))
		case x < w.put+w.get+w.lookup:
			_, err = tb.Lookup("UserID", secondary.StringValue(d.user()), 10)
		default: // an update: an existing row gets a new UserID
			err = tb.Put(pk(d.rng.Intn(rows)), d.row())
		}
		if err != nil {
			return nil, err
		}
	}
	el := time.Since(start)
	after := tb.Metrics()
	fmt.Fprintf(os.Stderr, "%s %s: %.1f µs/op\n", s, w.name, float64(el.Microseconds())/float64(*mixedN))
	return []result{
		{s, w.name + " µs/op", float64(el.Microseconds()) / float64(*mixedN)},
		{s, w.name + " blocks/op", float64(after.BlocksRead-before.BlocksRead) / float64(*mixedN)},
	}, nil
}

func report(rs []result) error {
	f, err := os.Create(filepath.Join(*out, "results.csv"))
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write([]string{"strategy", "metric", "value"})
	var metrics []string
	val := map[string]map[secondary.Strategy]float64{}
	for _, r := range rs {
		w.Write([]string{string(r.strategy), r.metric, strconv.FormatFloat(r.value, 'f', 4, 64)})
		if val[r.metric] == nil {
			metrics = append(metrics, r.metric)
			val[r.metric] = map[secondary.Strategy]float64{}
		}
		val[r.metric][r.strategy] = r.value
	}
	w.Flush()
	if err := f.Close(); err != nil {
		return err
	}
	var md strings.Builder
	fmt.Fprintf(&md, "%d rows, %d users, %d queries per measurement, %d operations per mix.\n\n| metric |", *n, *users, *queries, *mixedN)
	for _, s := range strategies {
		md.WriteString(" " + string(s) + " |")
	}
	md.WriteString("\n|---|" + strings.Repeat("---:|", len(strategies)) + "\n")
	for _, m := range metrics {
		md.WriteString("| " + m + " |")
		for _, s := range strategies {
			if v, ok := val[m][s]; ok {
				fmt.Fprintf(&md, " %.3g |", v)
			} else {
				md.WriteString(" — |")
			}
		}
		md.WriteString("\n")
	}
	md.WriteString("\n")
	// Short labels, so the plots' legends and groups fit.
	names := []string{"embedded", "hierarchy", "eager", "lazy", "composite", "deli"}
	for _, p := range []struct {
		file, title     string
		metrics, labels []string
	}{
		{"index-put.svg", "mean PUT µs (static load)", []string{"PUT µs"}, []string{"PUT"}},
		{"index-lookup.svg", "LOOKUP UserID, mean ms", []string{"LOOKUP UserID K=10 ms", "LOOKUP UserID K=100 ms", "LOOKUP UserID K=0 ms"}, []string{"K=10", "K=100", "no limit"}},
		{"index-mixed.svg", "mixed workloads, µs per operation", []string{"write-heavy 80/15/5 µs/op", "read-heavy 20/70/10 µs/op", "update-heavy 40/15/5/40 µs/op"}, []string{"write-heavy", "read-heavy", "update-heavy"}},
	} {
		var ss []experiments.Series
		for i, m := range p.metrics {
			sr := experiments.Series{Name: p.labels[i]}
			for _, s := range strategies {
				sr.Y = append(sr.Y, val[m][s])
			}
			ss = append(ss, sr)
		}
		if err := os.WriteFile(filepath.Join(*out, p.file), []byte(experiments.BarPlot(p.title, "", names, ss)), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(&md, "![%s](%s)\n", p.title, p.file)
	}
	fmt.Print(md.String())
	return os.WriteFile(filepath.Join(*out, "report.md"), []byte(md.String()), 0o644)
}

// pk is a row's key: ids grow with time, as tweet ids do, so the primary
// table's order is time order and zone maps on CreationTime can prune.
func pk(i int) string { return fmt.Sprintf("t%010d", i) }
