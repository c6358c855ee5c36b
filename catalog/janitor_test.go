package catalog

import (
	"fmt"
	"math"
	"math/rand/v2"
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

// TestSweepDeletesExactlyItsRange: a sweep, slice by slice, deletes the
// rows whose expiry lies in [from, to] and no other, against a map of the
// rows added.
func TestSweepDeletesExactlyItsRange(t *testing.T) {
	ix, err := ParseIndexes(DefaultIndexes)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Open(t.TempDir(), Config{Indexes: ix, Now: func() int64 { return 0 }, janitorEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rng := rand.New(rand.NewPCG(7, 8))
	live := map[string]int64{} // pid -> expiry
	const span = int64(3 * time.Second)
	for i := range 3000 {
		tmax := 1 + rng.Int64N(span)
		if i%10 == 0 {
			tmax = 1 + rng.Int64N(10)*sweepSlice // on a slice's edge
		}
		p := subscriptions.Publication{Uid: fmt.Sprintf("u%d", i%7), Cell: subscriptions.Cell{ID: dewey.ID{1, 2}}, Tp: int64(i + 1), Tmax: tmax}
		if err := c.Add(&p); err != nil {
			t.Fatal(err)
		}
		live[p.Pid()] = tmax
	}
	for round := range 8 {
		from := rng.Int64N(span)
		to := from + 1 + rng.Int64N(span/2)
		if round == 0 {
			from, to = 1+2*sweepSlice, 1+5*sweepSlice
		}
		want := 0
		for pid, tmax := range live {
			if tmax >= from && tmax <= to {
				delete(live, pid)
				want++
			}
		}
		n, err := c.sweep(nil, from, to)
		if err != nil || n != want {
			t.Fatalf("sweep [%d, %d]: deleted %d (%v), want %d", from, to, n, err, want)
		}
		rows, err := c.t.RangeLookup(colExpires, secondary.IntValue(math.MinInt64), secondary.IntValue(math.MaxInt64), 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(live) {
			t.Fatalf("after sweep [%d, %d]: %d rows, want %d", from, to, len(rows), len(live))
		}
		for _, r := range rows {
			if _, ok := live[r.Key]; !ok {
				t.Fatalf("after sweep [%d, %d]: row %s should be gone", from, to, r.Key)
			}
		}
	}
}
