package browsertest

import (
	"flag"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/heapprofiler"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

var (
	perf       = flag.Bool("demo.perf", false, "measure the page: fps with 1,000 users and 50 incidents/s, load time, heap over a minute")
	perfMinute = flag.Duration("demo.perf-span", time.Minute, "how long the heap is watched")
)

// TestDemoPerformance measures what docs/demo.md reports. It is a
// measurement, not an assertion: it logs and fails only if the page does.
func TestDemoPerformance(t *testing.T) {
	if !*perf {
		t.Skip("a measurement: run with -demo.perf (make demo-perf)")
	}
	b := startBroker(t)
	ctx, _ := openPage(t, b)
	load := eval[map[string]float64](t, ctx, `(() => { const n = performance.getEntriesByType("navigation")[0]; return {dcl: n.domContentLoadedEventEnd, load: n.loadEventEnd, ready: demo.readyAt}; })()`)
	t.Logf("page load: DOMContentLoaded %.0f ms, load %.0f ms, map drawn and WebSocket open %.0f ms", load["dcl"], load["load"], load["ready"])

	do(t, ctx, `demo.setUsers(1000), demo.setRate(50)`)
	heap := func() float64 {
		if _, err := chromedp.Call(ctx, heapprofiler.CollectGarbage, cdp.Empty{}); err != nil {
			t.Fatal(err)
		}
		h, err := chromedp.Call(ctx, runtime.GetHeapUsage, cdp.Empty{})
		if err != nil {
			t.Fatal(err)
		}
		return h.UsedSize / (1 << 20)
	}
	time.Sleep(10 * time.Second) // every user subscribed, incidents at their steady count
	before, start := heap(), time.Now()
	var sum, low float64 = 0, 1e9
	const samples = 20
	for range samples {
		time.Sleep(time.Second)
		f := float64(eval[int](t, ctx, `demo.fps()`))
		sum += f
		low = min(low, f)
	}
	state := eval[map[string]float64](t, ctx, `({users: demo.sim.users.length, live: demo.sim.users.filter(u => u.sid).length, incidents: demo.incidents.size, notified: demo.sim.notified, pubs: demo.charts.latest.pubsPerS, notes: demo.charts.latest.notesPerS, p50: demo.charts.latest.p50ms, p99: demo.charts.latest.p99ms})`)
	t.Logf("fps over %d s with 1,000 users and 50 incidents/s: mean %.1f, lowest %.0f", samples, sum/samples, low)
	t.Logf("page state: %v", state)
	time.Sleep(time.Until(start.Add(*perfMinute)))
	t.Logf("JS heap after GC: %.1f MiB before, %.1f MiB after %v", before, heap(), *perfMinute)
}
