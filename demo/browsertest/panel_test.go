package browsertest

import (
	"context"
	"testing"
)

// checkPanel checks the side panel's layout: every chart's legend names
// all its series, and each slider's row — its name, the slider and its
// value — stays on one line at the widest values.
func checkPanel(t *testing.T, ctx context.Context) {
	t.Helper()
	legends := eval[[]string](t, ctx, `[...document.querySelectorAll("#charts .uplot")].map((u) =>
		[...u.querySelectorAll(".u-legend .u-series")].filter((s) => s.offsetParent !== null && s.offsetWidth > 0).map((s) => s.textContent.trim()).join(","))`)
	want := []string{"pubs/s,notes/s", "live", "p50,p99", "L0,tables,MB/s"}
	if len(legends) != len(want) {
		t.Fatalf("chart legends %q, want %q", legends, want)
	}
	for i := range want {
		if legends[i] != want[i] {
			t.Errorf("chart %d's legend shows %q, want %q", i, legends[i], want[i])
		}
	}
	// The widest values each slider can show; then each row's cells sit
	// on one line, side by side.
	type row struct {
		Name   string  `json:"name"`
		Lines  float64 `json:"lines"`
		Spread float64 `json:"spread"`
	}
	rows := eval[[]row](t, ctx, `(() => {
		const set = (id, v) => { const el = document.querySelector(id); el.value = v; el.dispatchEvent(new Event("input")); };
		const before = ["#speed", "#rate", "#users-n"].map((id) => document.querySelector(id).value ?? document.querySelector(id).textContent);
		set("#speed", 4.75), set("#rate", 100);
		document.querySelector("#users-n").textContent = "10000"; // not 10,000 users for real
		const line = parseFloat(getComputedStyle(document.querySelector(".sliders")).lineHeight);
		const cells = [...document.querySelectorAll(".sliders > *")], out = [];
		for (let i = 0; i < cells.length; i += 3) {
			const rs = cells.slice(i, i + 3).map((c) => c.getBoundingClientRect());
			out.push({ name: cells[i].textContent, lines: Math.max(...rs.map((r) => r.height)) / line,
				spread: Math.max(...rs.map((r) => r.top + r.height / 2)) - Math.min(...rs.map((r) => r.top + r.height / 2)) });
		}
		set("#speed", before[0]), set("#rate", before[1]), document.querySelector("#users-n").textContent = before[2];
		return out;
	})()`)
	if len(rows) != 3 {
		t.Fatalf("slider rows: %+v", rows)
	}
	for _, r := range rows {
		if r.Lines > 1.5 || r.Spread > 4 {
			t.Errorf("the %q slider's row wraps: %.1f lines high, its cells %.0f px apart", r.Name, r.Lines, r.Spread)
		}
	}
}
