package dualdb

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/subscriptions"
)

// TestSubscriptionsOfAgainstAnOracle: a user's live, uncancelled
// subscriptions on cells overlapping some of the asked cells (what a
// cluster's self-join in another shard leaves out) are exactly the ones
// an oracle of the subscribes and cancels names, covers included.
func TestSubscriptionsOfAgainstAnOracle(t *testing.T) {
	ctx := context.Background()
	st, err := Open(t.TempDir(), listdb.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := rand.New(rand.NewSource(7))
	randCell := func() subscriptions.Cell {
		id := dewey.ID{}
		for range 1 + r.Intn(4) {
			id = append(id, uint32(1+r.Intn(3)))
		}
		return subscriptions.Cell{NS: subscriptions.NSCell, ID: id}
	}
	randCells := func() []subscriptions.Cell {
		cells := []subscriptions.Cell{randCell()}
		for r.Intn(3) == 0 {
			c := randCell()
			if !slices.ContainsFunc(cells, func(o subscriptions.Cell) bool { return overlaps(o, c) }) {
				cells = append(cells, c)
			}
		}
		return cells
	}
	type sub struct {
		uid   string
		sid   string
		cells []subscriptions.Cell
	}
	var live []sub // the oracle: stored and not cancelled
	checked := 0
	for i := range 600 {
		switch k := r.Intn(10); {
		case k < 5:
			cells := randCells()
			req := &subscriptions.SubscribeRequest{Uid: fmt.Sprintf("u%d", r.Intn(3)), Future: time.Hour, SelfJoin: r.Intn(4) == 0}
			if len(cells) == 1 {
				req.Cell = cells[0]
			} else {
				req.Cover = cells
			}
			if r.Intn(6) == 0 {
				req.Future = 0 // a query: not stored
			}
			res, err := st.Subscribe(ctx, req)
			if err != nil {
				t.Fatalf("op %d: %v", i, err)
			}
			if res.Stored {
				live = append(live, sub{req.Uid, res.Sub.Sid(), cells})
			}
		case k < 7 && len(live) > 0:
			j := r.Intn(len(live))
			if err := st.Unsubscribe(ctx, live[j].sid, nil); err != nil {
				t.Fatalf("op %d: unsubscribe %s: %v", i, live[j].sid, err)
			}
			live = slices.Delete(live, j, j+1)
		default:
			uid, cells := fmt.Sprintf("u%d", r.Intn(3)), randCells()
			got, err := st.SubscriptionsOf(ctx, uid, cells)
			if err != nil {
				t.Fatalf("op %d: %v", i, err)
			}
			var gotSids, want []string
			for _, s := range got {
				gotSids = append(gotSids, s.Sid())
			}
			for _, s := range live {
				if s.uid == uid && slices.ContainsFunc(s.cells, func(a subscriptions.Cell) bool {
					return slices.ContainsFunc(cells, func(b subscriptions.Cell) bool { return overlaps(a, b) })
				}) {
					want = append(want, s.sid)
				}
			}
			slices.Sort(gotSids)
			slices.Sort(want)
			if !slices.Equal(gotSids, want) {
				t.Fatalf("op %d: subscriptions of %s on %v: %v, want %v", i, uid, cells, gotSids, want)
			}
			checked += len(want)
		}
	}
	if checked < 100 {
		t.Fatalf("only %d subscriptions found in all: the workload tests too little", checked)
	}
}

// overlaps is the oracle's own test: one cell's components begin the
// other's.
func overlaps(a, b subscriptions.Cell) bool {
	x, y := a.ID.String()+".", b.ID.String()+"."
	return strings.HasPrefix(x, y) || strings.HasPrefix(y, x)
}
