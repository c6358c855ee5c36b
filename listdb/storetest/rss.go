package storetest

import (
	"context"
	"flag"
	"math/rand"
	"runtime"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/internal/procstat"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/subscriptions"
)

var rssSubs = flag.Int("store.rss", 0, "store this many live subscriptions and report RSS (e.g. 10000000)")

// RSS stores -store.rss live subscriptions (one-hour windows, random grid
// cells) with default engine options and checks that RSS stays under
// 512 MiB: subscriptions live in the LSM, not in Go memory.
func RSS(t *testing.T, open Opener) {
	if *rssSubs == 0 {
		t.Skip("set -store.rss=N to run")
	}
	grid, _ := dewey.NewGrid(dewey.NewYorkState, 500, 500)
	clock := subscriptions.NewFakeClock(start)
	st, err := open(t.TempDir(), listdb.Config{Clock: clock, Now: clock.Peek}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rng := rand.New(rand.NewSource(1))
	ctx := context.Background()
	req := &subscriptions.SubscribeRequest{Uid: "u", Future: time.Hour}
	began := time.Now()
	peak := 0.0
	for i := 1; i <= *rssSubs; i++ {
		clock.Advance(100 * time.Nanosecond)
		id, _ := grid.Cell(40.5+rng.Float64()*4.5, -79.7+rng.Float64()*7.8)
		req.Cell = subscriptions.Cell{NS: subscriptions.NSCell, ID: id}
		if _, err := st.Subscribe(ctx, req); err != nil {
			t.Fatal(err)
		}
		if i%1_000_000 == 0 {
			runtime.GC()
			r := procstat.RSSMiB()
			peak = max(peak, r)
			t.Logf("%d live subscriptions: RSS %.0f MiB, %.0f subscribes/s", i, r, float64(i)/time.Since(began).Seconds())
		}
	}
	var disk uint64
	for _, m := range st.Backend().Metrics() {
		disk += m.DiskSize()
	}
	t.Logf("peak RSS %.0f MiB with %d live subscriptions, %.0f MiB of tables", peak, *rssSubs, float64(disk)/(1<<20))
	if peak > 512 {
		t.Fatalf("peak RSS %.0f MiB over 512 MiB", peak)
	}
}
