package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/subscriptions"
)

// ShallowestMark checks the low-water mark of cell depths that bounds the
// ancestors a scan reads: after deep cells only, a shallower subscription
// written later, and again after a reopen, is met by publications below
// it, in each namespace on its own.
func ShallowestMark(t *testing.T, open Opener) {
	ctx := context.Background()
	clock := subscriptions.NewFakeClock(start)
	cfg := listdb.Config{Limits: limits, Clock: clock, Now: clock.Peek}
	dir := t.TempDir()
	st, err := open(dir, cfg, SmallEngine())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { st.Close() }()
	deep := func(ns subscriptions.Namespace, d int) subscriptions.Cell {
		id := dewey.ID{3}
		for len(id) < d {
			id = id.Child(2)
		}
		return subscriptions.Cell{NS: ns, ID: id}
	}
	subscribe := func(uid string, c subscriptions.Cell) {
		t.Helper()
		if _, err := st.Subscribe(ctx, &subscriptions.SubscribeRequest{Uid: uid, Cell: c, Future: time.Minute}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Millisecond)
	}
	heard := func(when string, c subscriptions.Cell, want ...string) {
		t.Helper()
		res, err := st.Publish(ctx, &subscriptions.PublishRequest{Uid: "p", Cell: c, Expires: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Millisecond)
		var got []string
		for _, m := range res.Matches {
			got = append(got, m.Uid)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: a publication at depth %d reached %v, want %v", when, len(c.ID), got, want)
		}
	}
	for _, ns := range []subscriptions.Namespace{subscriptions.NSCell, subscriptions.NSTopic} {
		subscribe("d9", deep(ns, 9))
		heard("deep only", deep(ns, 10), "d9")
		subscribe("d3", deep(ns, 3))
		heard("after a shallower one", deep(ns, 10), "d3", "d9")
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if st, err = open(dir, cfg, SmallEngine()); err != nil {
			t.Fatal(err)
		}
		heard("after a reopen", deep(ns, 10), "d3", "d9")
		subscribe("d1", deep(ns, 1))
		heard("after the shallowest", deep(ns, 10), "d1", "d3", "d9")
	}
}
