package dualdb

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/subscriptions"
)

// TestRestoreRebuildsAStore: records written by one store and restored
// into a fresh one (a cluster shard's new owner replaying its log) give
// the same replays, covers included, and later stamps come after them.
func TestRestoreRebuildsAStore(t *testing.T) {
	ctx := context.Background()
	a, err := Open(t.TempDir(), listdb.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(t.TempDir(), listdb.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cell := func(s string) subscriptions.Cell {
		return subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.MustParse(s)}
	}
	var frags [][]byte
	var sids []string
	sub := func(r *subscriptions.SubscribeRequest) {
		res, err := a.Subscribe(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		frags = append(frags, listdb.EncodeSubscription(&res.Sub))
		sids = append(sids, res.Sub.Sid())
	}
	pub := func(r *subscriptions.PublishRequest) int64 {
		res, err := a.Publish(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		frags = append(frags, listdb.EncodePublication(&res.Pub))
		return res.Pub.Tp
	}
	sub(&subscriptions.SubscribeRequest{Uid: "s", Cell: cell("1.2"), Future: time.Hour})
	sub(&subscriptions.SubscribeRequest{Uid: "t", Cover: []subscriptions.Cell{cell("1.3.1"), cell("1.4.2")}, Future: time.Hour, SelfJoin: true})
	pub(&subscriptions.PublishRequest{Uid: "p", Cell: cell("1.2.3"), Expires: time.Hour, Desc: "a"})
	pub(&subscriptions.PublishRequest{Uid: "p", Cover: []subscriptions.Cell{cell("1.2.4"), cell("1.4")}, Expires: time.Hour, Desc: "b"})
	last := pub(&subscriptions.PublishRequest{Uid: "p", Cell: cell("1"), Expires: time.Hour, Desc: "c"})
	for _, f := range frags {
		if err := b.Restore(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	descs := func(s *listdb.Store, sid string) []string {
		r, err := s.Replay(ctx, sid, 0)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range r.Pubs {
			out = append(out, p.Desc)
		}
		slices.Sort(out)
		return out
	}
	for _, sid := range sids {
		want, got := descs(a, sid), descs(b, sid)
		if !slices.Equal(want, got) || len(want) == 0 {
			t.Fatalf("%s: restored store replays %v, the original %v", sid, got, want)
		}
	}
	res, err := b.Publish(ctx, &subscriptions.PublishRequest{Uid: "p", Cell: cell("1.2"), Expires: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pub.Tp <= last {
		t.Fatalf("a stamp after restoring (%d) is not after the restored ones (%d)", res.Pub.Tp, last)
	}
	if err := b.Restore(ctx, []byte{1, 2, 3}); err == nil {
		t.Fatal("a damaged fragment was restored")
	}
}
