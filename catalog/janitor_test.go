package catalog

import (
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/secondary"
	"github.com/seed84792017/cellcast/subscriptions"
)

// TestJanitorDeletesLateRows: the janitor deletes rows as they expire,
// each sweep going on from where the last one ended, and a row
// catalogued with an expiry the sweeps have already passed goes at the
// next full sweep.
func TestJanitorDeletesLateRows(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(time.Hour))
	ix, err := ParseIndexes(DefaultIndexes)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Open(t.TempDir(), Config{Indexes: ix, Now: now.Load, janitorEvery: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	add := func(i int, tmax int64) {
		p := subscriptions.Publication{Uid: fmt.Sprintf("u%d", i%5), Cell: subscriptions.Cell{ID: dewey.ID{1, 2}}, Tp: int64(i + 1), Tmax: tmax}
		if err := c.Add(&p); err != nil {
			t.Fatal(err)
		}
	}
	waitLeft := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			rows, err := c.t.RangeLookup(colExpires, secondary.IntValue(math.MinInt64), secondary.IntValue(math.MaxInt64), 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d rows left, want %d", len(rows), want)
			}
		}
	}
	for i := range 100 {
		add(i, now.Load()+int64(i+1)*int64(time.Second))
	}
	now.Add(int64(50 * time.Second))
	waitLeft(50)
	add(1000, int64(time.Hour)-1) // long past every sweep's start but the full ones'
	waitLeft(50)
	now.Add(int64(50 * time.Second))
	waitLeft(0)
}
