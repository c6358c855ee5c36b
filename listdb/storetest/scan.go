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

// ScanPublications checks Store.ScanPublications against a plain record of
// what was published: every publication still live at the scan's stamp is
// reported once, nothing else (no expired one, no subscription), across
// flushes, compactions and a reopen, in both namespaces.
func ScanPublications(t *testing.T, open Opener) {
	ctx := context.Background()
	rng := rand.New(rand.NewSource(7))
	clock := subscriptions.NewFakeClock(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC).UnixNano())
	cfg := listdb.Config{Clock: clock, Now: clock.Peek, Durability: listdb.Buffered}
	dir := t.TempDir()
	st, err := open(dir, cfg, SmallEngine())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { st.Close() }()
	var published []subscriptions.Publication
	check := func(when string) {
		t.Helper()
		got := map[int64]subscriptions.Publication{}
		asOf, err := st.ScanPublications(ctx, func(p *subscriptions.Publication) error {
			if _, dup := got[p.Tp]; dup {
				t.Fatalf("%s: %s reported twice", when, p.Pid())
			}
			got[p.Tp] = *p
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		want := 0
		for _, p := range published {
			if p.Tmax <= asOf {
				continue
			}
			want++
			q, ok := got[p.Tp]
			if !ok {
				t.Fatalf("%s: live publication %s not reported", when, p.Pid())
			}
			if q.Pid() != p.Pid() || q.Uid != p.Uid || q.Desc != p.Desc || q.Tmax != p.Tmax || len(q.Attrs) != len(p.Attrs) {
				t.Fatalf("%s: %s reported as %+v, published as %+v", when, p.Pid(), q, p)
			}
		}
		if len(got) != want {
			t.Fatalf("%s: %d publications reported, %d live", when, len(got), want)
		}
		if want == 0 {
			t.Fatalf("%s: nothing live to check", when)
		}
	}
	for i := 0; i < 3000; i++ {
		c := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{uint32(1 + rng.Intn(4)), uint32(1 + rng.Intn(4))}[:1+rng.Intn(2)]}
		if rng.Intn(4) == 0 {
			c.NS = subscriptions.NSTopic
		}
		if rng.Intn(3) == 0 {
			if _, err := st.Subscribe(ctx, &subscriptions.SubscribeRequest{Uid: "s", Cell: c, Past: time.Minute, Future: time.Minute}); err != nil {
				t.Fatal(err)
			}
		} else {
			res, err := st.Publish(ctx, &subscriptions.PublishRequest{Uid: "p", Cell: c, Expires: time.Duration(1+rng.Intn(60)) * time.Second,
				Desc: "d", Attrs: map[string]string{"i": "x"}})
			if err != nil {
				t.Fatal(err)
			}
			published = append(published, res.Pub)
		}
		clock.Advance(time.Duration(rng.Intn(40)) * time.Millisecond)
		if i%1000 == 999 {
			if err := st.Backend().Flush(); err != nil {
				t.Fatal(err)
			}
			check("after a flush")
		}
	}
	check("with memtables")
	if err := st.Backend().Compact(ctx); err != nil {
		t.Fatal(err)
	}
	check("after a compaction")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err = open(dir, cfg, SmallEngine()); err != nil {
		t.Fatal(err)
	}
	check("after a reopen")
}
