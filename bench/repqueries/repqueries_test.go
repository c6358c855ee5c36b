package repqueries

import (
	"context"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/subscriptions"
)

// Repeated queries find what was published during the subscription's
// window, once each, but only at the next tick.
func TestRepeatedQueriesFindLaterPublications(t *testing.T) {
	clock := subscriptions.NewFakeClock(1_700_000_000_000_000_000)
	st, err := Open(t.TempDir(), listdb.Config{Clock: clock, Now: clock.Peek}, nil, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	cell := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1, 2}}
	st.Publish(ctx, &subscriptions.PublishRequest{Uid: "p", Cell: cell, Expires: time.Minute})
	res, err := st.Subscribe(ctx, &subscriptions.SubscribeRequest{Uid: "u", Cell: cell, Past: 10 * time.Second, Future: 5 * time.Second})
	if err != nil || len(res.Past) != 1 {
		t.Fatalf("historic query: %v %v", res, err)
	}
	for i := 0; i < 3; i++ {
		clock.Advance(400 * time.Millisecond)
		pr, _ := st.Publish(ctx, &subscriptions.PublishRequest{Uid: "p", Cell: cell, Expires: time.Minute})
		if len(pr.Matches) != 0 {
			t.Fatal("RepQueries delivered instantly")
		}
	}
	for i := 0; i < 10; i++ {
		clock.Advance(time.Second)
		if err := st.Tick(ctx, clock.Peek()); err != nil {
			t.Fatal(err)
		}
	}
	// Ticks come at +2.2 s, +3.2 s, +4.2 s and +5.2 s; the window ends at +5 s.
	if st.Found != 3 || st.Requeried != 4 {
		t.Fatalf("found %d in %d repeats, want 3 in 4", st.Found, st.Requeried)
	}
}
