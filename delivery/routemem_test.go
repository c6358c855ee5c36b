package delivery

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/subscriptions"
)

// BenchmarkRouteMemory reports what a live route costs the hub in heap
// bytes: the route, its sid and uid, its place in the routes map
// and in the expiry buckets (goal: ≤ 200 bytes).
//
//	go test ./delivery -run '^$' -bench RouteMemory
func BenchmarkRouteMemory(b *testing.B) {
	const n = 100_000
	cell := subscriptions.Cell{ID: []uint32{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4}}
	for range b.N {
		h := New(Config{Clock: subscriptions.NewFakeClock(0), Encode: func(p *subscriptions.Publication) []byte { return nil }})
		k := newSink()
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range n {
			s := subscriptions.Subscription{Ts: now + int64(i), Uid: "u" + strconv.Itoa(i), Cell: cell}
			r := &route{sink: k, sid: s.Sid(), uid: s.Uid, ts: s.Ts, from: s.Ts, tmax: s.Ts + int64(time.Hour)}
			h.attach(r, nil)
			h.open(r)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/route")
		runtime.KeepAlive(h)
		h.Close()
	}
}
