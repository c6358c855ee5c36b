package experiments

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ThesisClaims are the thesis's findings for each figure, as its text
// states them.
var ThesisClaims = map[string]string{
	"4.8":  "Thesis: DualDB beats TwoDB by up to 5% on simple subscriptions; RepQueries is up to 10× slower",
	"4.9":  "Thesis: as 4.8",
	"4.10": "Thesis: DualDB beats TwoDB by up to 20% on self-joins",
	"4.11": "Thesis: as 4.10",
	"4.12": "Thesis: variable granularity about 3× (\"300% better\") faster than fixed",
	"4.13": "Thesis: variable granularity about 2× (\"200% better\") faster than fixed for circles",
	"4.14": "Thesis: variable faster than fixed at every level, more so near the root",
	"4.15": "Thesis: variable faster than fixed at every radius",
}

// Report writes each figure's plots into dir as SVG (names fig-4.8.svg,
// …) and returns a markdown report that links them as imgPrefix+name and
// states, for each figure, what claims says.
func Report(dir, imgPrefix string, rs []*Result, claims map[string]string) (string, error) {
	var figs []string
	byFig := map[string][]*Result{}
	for _, r := range rs {
		f := r.Setup.Figure
		if byFig[f] == nil {
			figs = append(figs, f)
		}
		byFig[f] = append(byFig[f], r)
	}
	var md strings.Builder
	write := func(name, svg string) error {
		fmt.Fprintf(&md, "![%s](%s%s)\n", name, imgPrefix, name)
		return os.WriteFile(filepath.Join(dir, name), []byte(svg), 0o644)
	}
	for _, f := range figs {
		rs := byFig[f]
		s := rs[0].Setup
		fmt.Fprintf(&md, "\n### Fig. %s — %s\n\n%s.\n\n", f, s.Name, claims[f])
		if s.X == "" {
			if err := lineFigure(&md, write, f, rs); err != nil {
				return "", err
			}
			continue
		}
		if err := barFigure(&md, write, f, rs); err != nil {
			return "", err
		}
	}
	return md.String(), nil
}

func lineFigure(md *strings.Builder, write func(string, string) error, f string, rs []*Result) error {
	unit, div := "thousand", 1e3
	if rs[0].Setup.Workload.Ops >= 2_000_000 {
		unit, div = "million", 1e6
	}
	var means, cum []Series
	md.WriteString("| store | µs/op | SUBSCRIBE µs | PUBLISH µs | vs " + rs[0].Store + " | RSS MiB |\n|---|---:|---:|---:|---:|---:|\n")
	for _, r := range rs {
		m := Series{Name: r.Store}
		c := Series{Name: r.Store}
		for _, ch := range r.Chunks {
			m.X, m.Y = append(m.X, float64(ch.Ops)/div), append(m.Y, ch.Mean)
			c.X, c.Y = append(c.X, float64(ch.Ops)/div), append(c.Y, ch.Cumulative)
		}
		means, cum = append(means, m), append(cum, c)
		fmt.Fprintf(md, "| %s | %.2f | %.2f | %.2f | %.2f× | %.0f |\n", r.Store, r.Mean, r.SubMean, r.PubMean, r.Mean/rs[0].Mean, r.RSSMiB)
	}
	md.WriteString("\n")
	title := "Fig. " + f + ": " + rs[0].Setup.Name
	if err := write("fig-"+f+".svg", LinePlot(title, "operations ("+unit+"s)", "mean µs per operation", means)); err != nil {
		return err
	}
	return write("fig-"+f+"-cumulative.svg", LinePlot(title+", cumulative", "operations ("+unit+"s)", "seconds", cum))
}

func barFigure(md *strings.Builder, write func(string, string) error, f string, rs []*Result) error {
	var groups, stores []string
	y := map[string][]float64{}
	for _, r := range rs {
		if len(groups) == 0 || groups[len(groups)-1] != r.Setup.X {
			groups = append(groups, r.Setup.X)
		}
		if y[r.Store] == nil {
			stores = append(stores, r.Store)
		}
		y[r.Store] = append(y[r.Store], r.Mean)
	}
	md.WriteString("| | " + strings.Join(groups, " | ") + " |\n|---|" + strings.Repeat("---:|", len(groups)) + "\n")
	var ss []Series
	for _, s := range stores {
		ss = append(ss, Series{Name: s, Y: y[s]})
		md.WriteString("| " + s + " µs/op |")
		for _, v := range y[s] {
			fmt.Fprintf(md, " %.1f |", v)
		}
		md.WriteString("\n")
	}
	if len(stores) == 2 {
		md.WriteString("| " + stores[1] + " / " + stores[0] + " |")
		for i := range groups {
			fmt.Fprintf(md, " %.2f× |", y[stores[1]][i]/y[stores[0]][i])
		}
		md.WriteString("\n")
	}
	md.WriteString("\n")
	return write("fig-"+f+".svg", BarPlot("Fig. "+f+": "+rs[0].Setup.Name, "mean µs per operation", groups, ss))
}

// FullScale is the -scale that runs the thesis's 15 million operations
// per flat workload.
const FullScale = 15_000_000.0 / 400_000

// ParseScale reads a -scale flag: a positive multiple of the default
// size, or "full".
func ParseScale(s string) (float64, error) {
	if s == "full" {
		return FullScale, nil
	}
	k, err := strconv.ParseFloat(s, 64)
	if err != nil || !(k > 0) || math.IsInf(k, 0) {
		return 0, fmt.Errorf("-scale %q: want a positive number or full", s)
	}
	return k, nil
}

// WriteResults writes results.csv, the SVG figures and report.md (see
// Report) into dir.
func WriteResults(dir string, rs []*Result, claims map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var csv strings.Builder
	if err := WriteCSV(&csv, rs); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.csv"), []byte(csv.String()), 0o644); err != nil {
		return err
	}
	md, err := Report(dir, "", rs, claims)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(md), 0o644)
}
