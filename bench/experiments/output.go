package experiments

import (
	"encoding/csv"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// WriteCSV writes one row per chunk of every result.
func WriteCSV(w io.Writer, rs []*Result) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"figure", "workload", "x", "store", "ops", "chunk_mean_us", "cumulative_s", "mean_us", "subscribe_mean_us", "publish_mean_us", "rss_mib"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	for _, r := range rs {
		for _, c := range r.Chunks {
			cw.Write([]string{r.Setup.Figure, r.Setup.Name, r.Setup.X, r.Store, strconv.Itoa(c.Ops), f(c.Mean), f(c.Cumulative),
				f(r.Mean), f(r.SubMean), f(r.PubMean), f(r.RSSMiB)})
		}
	}
	cw.Flush()
	return cw.Error()
}

var colors = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd"}

// Series is one line or one set of bars.
type Series struct {
	Name string
	X, Y []float64
}

// frame is a plot area: at maps data to it.
type frame struct {
	at                  func(x, y float64) (float64, float64)
	left, right, bottom float64
}

// svgFrame draws axes from 0 to xmax and ymax with ticks and labels (no x
// ticks when xmax is 0).
func svgFrame(b *strings.Builder, title, xlabel, ylabel string, xmax, ymax float64) frame {
	const w, h, l, r, t, bot = 640.0, 400.0, 70.0, 160.0, 40.0, 50.0
	pw, ph := w-l-r, h-t-bot
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="white"/><text x="%g" y="22" font-size="14" text-anchor="middle">%s</text>`+"\n", l+pw/2, html.EscapeString(title))
	fmt.Fprintf(b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="black"/><line x1="%g" y1="%g" x2="%g" y2="%g" stroke="black"/>`+"\n", l, t+ph, l+pw, t+ph, l, t, l, t+ph)
	for i := 0; i <= 5; i++ {
		y := ymax * float64(i) / 5
		py := t + ph - ph*float64(i)/5
		fmt.Fprintf(b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#ddd"/><text x="%g" y="%g" text-anchor="end">%s</text>`+"\n", l, py, l+pw, py, l-6, py+4, short(y))
		if xmax > 0 {
			x := xmax * float64(i) / 5
			px := l + pw*float64(i)/5
			fmt.Fprintf(b, `<text x="%g" y="%g" text-anchor="middle">%s</text>`+"\n", px, t+ph+16, short(x))
		}
	}
	fmt.Fprintf(b, `<text x="%g" y="%g" text-anchor="middle">%s</text>`+"\n", l+pw/2, h-10, html.EscapeString(xlabel))
	fmt.Fprintf(b, `<text transform="translate(16 %g) rotate(-90)" text-anchor="middle">%s</text>`+"\n", t+ph/2, html.EscapeString(ylabel))
	at := func(x, y float64) (float64, float64) { return l + pw*x/xmax, t + ph - ph*y/ymax }
	return frame{at: at, left: l, right: l + pw, bottom: t + ph}
}

func legend(b *strings.Builder, right float64, names []string) {
	for i, n := range names {
		y := 50.0 + 18*float64(i)
		fmt.Fprintf(b, `<rect x="%g" y="%g" width="12" height="12" fill="%s"/><text x="%g" y="%g">%s</text>`+"\n", right+14, y-10, colors[i%len(colors)], right+32, y, html.EscapeString(n))
	}
}

// LinePlot draws series as lines.
func LinePlot(title, xlabel, ylabel string, ss []Series) string {
	var xmax, ymax float64
	for _, s := range ss {
		for i := range s.X {
			xmax, ymax = math.Max(xmax, s.X[i]), math.Max(ymax, s.Y[i])
		}
	}
	var b strings.Builder
	f := svgFrame(&b, title, xlabel, ylabel, nice(xmax), nice(ymax))
	var names []string
	for i, s := range ss {
		var pts []string
		for j := range s.X {
			x, y := f.at(s.X[j], s.Y[j])
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", colors[i%len(colors)], strings.Join(pts, " "))
		names = append(names, s.Name)
	}
	legend(&b, f.right, names)
	b.WriteString("</svg>\n")
	return b.String()
}

// BarPlot draws groups of bars, one bar per series in each group.
func BarPlot(title, ylabel string, groups []string, ss []Series) string {
	var ymax float64
	for _, s := range ss {
		for _, y := range s.Y {
			ymax = math.Max(ymax, y)
		}
	}
	var b strings.Builder
	ym := nice(ymax)
	f := svgFrame(&b, title, "", ylabel, 0, ym)
	y0 := f.bottom
	height := func(v float64) float64 { return (f.bottom - 40) * v / ym } // the plot's top is at 40
	gw := (f.right - f.left) / float64(len(groups))
	bw := gw * 0.8 / float64(len(ss))
	var names []string
	for i, s := range ss {
		for g := range groups {
			hgt := height(s.Y[g])
			x := f.left + gw*float64(g) + gw*0.1 + bw*float64(i)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x, y0-hgt, bw, hgt, colors[i%len(colors)])
		}
		names = append(names, s.Name)
	}
	for g, name := range groups {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", f.left+gw*(float64(g)+0.5), y0+16, html.EscapeString(name))
	}
	legend(&b, f.right, names)
	b.WriteString("</svg>\n")
	return b.String()
}

// nice rounds up to 1, 2 or 5 times a power of ten.
func nice(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func short(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
