package storetest

import (
	"context"
	"math/rand"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/subscriptions"
)

// Workload is one of the thesis's in-process workloads (4.7).
type Workload struct {
	// SubsPerPub is the subscription:publication ratio (3 = 3:1).
	SubsPerPub float64
	SelfJoin   bool
}

// Bench runs b.N operations of a workload on the 500×500 grid over New York:
// ±10 s windows, 20 s expiry, uniformly random cells, the clock advancing
// 10 µs per operation (100k operations per simulated second), default engine
// options. It reports µs/op through the benchmark framework.
func Bench(b *testing.B, open Opener, w Workload) {
	grid, err := dewey.NewGrid(dewey.NewYorkState, 500, 500)
	if err != nil {
		b.Fatal(err)
	}
	clock := subscriptions.NewFakeClock(start)
	st, err := open(b.TempDir(), listdb.Config{Clock: clock, Now: clock.Peek, Durability: listdb.Buffered}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	rng := rand.New(rand.NewSource(1))
	cells := make([]subscriptions.Cell, 1<<16)
	for i := range cells {
		lat := dewey.NewYorkState.MinLat + rng.Float64()*(dewey.NewYorkState.MaxLat-dewey.NewYorkState.MinLat)
		lng := dewey.NewYorkState.MinLng + rng.Float64()*(dewey.NewYorkState.MaxLng-dewey.NewYorkState.MinLng)
		id, _ := grid.Cell(lat, lng)
		cells[i] = subscriptions.Cell{NS: subscriptions.NSCell, ID: id}
	}
	pSub := w.SubsPerPub / (1 + w.SubsPerPub)
	ctx := context.Background()
	sub := &subscriptions.SubscribeRequest{Uid: "u", Past: 10 * time.Second, Future: 10 * time.Second, SelfJoin: w.SelfJoin}
	pub := &subscriptions.PublishRequest{Uid: "p", Expires: 20 * time.Second, Desc: "accident near Albany", SelfJoin: w.SelfJoin}
	matched := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		clock.Advance(10 * time.Microsecond)
		c := cells[i&(len(cells)-1)]
		if rng.Float64() < pSub {
			sub.Cell = c
			res, err := st.Subscribe(ctx, sub)
			if err != nil {
				b.Fatal(err)
			}
			matched += len(res.Past)
		} else {
			pub.Cell = c
			res, err := st.Publish(ctx, pub)
			if err != nil {
				b.Fatal(err)
			}
			matched += len(res.Matches)
		}
	}
	b.ReportMetric(float64(matched)/float64(b.N), "matches/op")
}
