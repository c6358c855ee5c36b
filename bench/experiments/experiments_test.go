package experiments

import (
	"encoding/csv"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed84792017/cellcast/bench/workload"
)

// TestSmallRunOfEveryFigure runs every setup at 1/200 of the default size
// on every store it names and checks that each figure is reported: a CSV
// row per chunk, a well-formed SVG per plot and a report section.
func TestSmallRunOfEveryFigure(t *testing.T) {
	openers := Openers(nil)
	var rs []*Result
	figures := map[string]bool{}
	for _, s := range Setups(0.005) {
		figures[s.Figure] = true
		for _, name := range s.Stores {
			r, err := Run(s, name, openers[name], max(1, s.Workload.Ops/4))
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Chunks) != 4 && len(r.Chunks) != 5 || r.Chunks[len(r.Chunks)-1].Ops != s.Workload.Ops {
				t.Fatalf("%s %s on %s: chunks %+v for %d operations", s.Figure, s.X, name, r.Chunks, s.Workload.Ops)
			}
			if r.Mean <= 0 || r.SubMean <= 0 || r.PubMean <= 0 {
				t.Fatalf("%s on %s: means %g %g %g", s.Figure, name, r.Mean, r.SubMean, r.PubMean)
			}
			rs = append(rs, r)
		}
	}
	if len(figures) != 8 {
		t.Fatalf("figures %v, want 4.8 to 4.15", figures)
	}
	dir := t.TempDir()
	var csvOut strings.Builder
	if err := WriteCSV(&csvOut, rs); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(csvOut.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rs {
		n += len(r.Chunks)
	}
	if len(rows) != n+1 {
		t.Fatalf("%d CSV rows for %d chunks", len(rows), n)
	}
	md, err := Report(dir, "figures/", rs, ThesisClaims)
	if err != nil {
		t.Fatal(err)
	}
	svgs, _ := filepath.Glob(filepath.Join(dir, "*.svg"))
	// 4.8–4.13 have two plots each, 4.14 and 4.15 one.
	if len(svgs) != 14 {
		t.Fatalf("%d plots: %v", len(svgs), svgs)
	}
	for _, f := range svgs {
		if !strings.Contains(md, "(figures/"+filepath.Base(f)+")") {
			t.Errorf("the report does not show %s", filepath.Base(f))
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d := xml.NewDecoder(strings.NewReader(string(b)))
		for {
			if _, err := d.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
		}
	}
	for f := range figures {
		if !strings.Contains(md, "### Fig. "+f+" ") {
			t.Errorf("no section for Fig. %s", f)
		}
	}
}

// TestSetupsScale: the default scale is what docs/storage-benchmarks.md
// describes, and every setup makes a valid workload.
func TestSetupsScale(t *testing.T) {
	for _, s := range Setups(1) {
		if _, err := workload.New(s.Workload); err != nil {
			t.Fatalf("%s %s: %v", s.Figure, s.X, err)
		}
		want := map[string]int{"4.12": 10_000, "4.13": 10_000, "4.14": 2_000, "4.15": 2_000}[s.Figure]
		if s.Workload.Space == workload.Grid {
			want = 400_000
		}
		if s.Workload.Ops != want {
			t.Errorf("%s %s: %d operations, want %d", s.Figure, s.X, s.Workload.Ops, want)
		}
	}
}

func TestParseScale(t *testing.T) {
	if k, err := ParseScale("full"); err != nil || k*400_000 != 15_000_000 {
		t.Fatalf("full: %g, %v", k, err)
	}
	if k, err := ParseScale("0.5"); err != nil || k != 0.5 {
		t.Fatalf("0.5: %g, %v", k, err)
	}
	for _, bad := range []string{"0", "-1", "x", "NaN", "Inf"} {
		if _, err := ParseScale(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
