package service

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/catalog"
	"github.com/seed84792017/cellcast/delivery"
	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/dualdb"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/subscriptions"
)

type chanSink struct{ ch chan *delivery.Notification }

func (k chanSink) Notify(n *delivery.Notification) bool {
	c := *n // the hub reuses n
	select {
	case k.ch <- &c:
		return true
	default:
		return false
	}
}
func (chanSink) Ended(delivery.End) {}

func open(t *testing.T, dir string, cfg Config) *Service {
	t.Helper()
	store, err := dualdb.Open(filepath.Join(dir, "db"), listdb.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Catalog == nil {
		ix, _ := catalog.ParseIndexes(catalog.DefaultIndexes)
		if cfg.Catalog, err = catalog.Open(filepath.Join(dir, "catalog"), catalog.Config{Indexes: ix}); err != nil {
			store.Close()
			t.Fatal(err)
		}
	}
	cfg.Store = store
	cfg.Encode = func(p *subscriptions.Publication) []byte { return []byte(p.Pid()) }
	return New(cfg)
}

func cell(s string) subscriptions.Cell {
	return subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.MustParse(s)}
}

// TestPublishDispatchesBeforeItsAnswer: the catalog write and the answer
// come after the publication is released, so a notification reaches a
// subscriber while the publisher's answer is still running; and a query
// made once the answer ran finds the publication.
func TestPublishDispatchesBeforeItsAnswer(t *testing.T) {
	s := open(t, t.TempDir(), Config{})
	defer s.Close()
	ctx := context.Background()
	sink := chanSink{make(chan *delivery.Notification, 16)}
	var sid string
	err := s.Subscribe(ctx, &subscriptions.SubscribeRequest{Uid: "alice", Cell: cell("1.2"), Future: time.Hour}, sink,
		func(_ *subscriptions.SubscribeResult, id string) { sid = id })
	if err != nil {
		t.Fatal(err)
	}
	var pid string
	err = s.Publish(ctx, &subscriptions.PublishRequest{Uid: "bob", Cell: cell("1.2.3"), Expires: time.Hour, Attrs: map[string]string{"category": "fire"}},
		func(res *subscriptions.PublishResult) {
			pid = res.Pub.Pid()
			// Were dispatch held back by this answer, nothing would come.
			select {
			case n := <-sink.ch:
				if n.Sid != sid || n.Pub.Pid() != pid {
					t.Errorf("notification %s for %s, want %s for %s", n.Pub.Pid(), n.Sid, pid, sid)
				}
			case <-time.After(30 * time.Second):
				t.Error("no notification while the publisher's answer ran: dispatch waits for the answer")
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	bob := "bob"
	got, err := s.Query(context.Background(), Query{Attr: "uid", Eq: &bob, K: 5})
	if err != nil || len(got) != 1 || got[0].Pid() != pid {
		t.Fatalf("query after published: %v, %v; want %s", got, err, pid)
	}
	fire := "fire"
	if got, err := s.Query(context.Background(), Query{Attr: "category", Eq: &fire, K: 5}); err != nil || len(got) != 1 {
		t.Fatalf("query by category: %v, %v", got, err)
	}
}

// TestQueryErrors: a bad query or a missing catalog is the caller's
// mistake, told apart with errors.Is.
func TestQueryErrors(t *testing.T) {
	s := open(t, t.TempDir(), Config{})
	defer s.Close()
	bad := "yesterday"
	for name, q := range map[string]Query{
		"unknown attribute": {Attr: "colour", Eq: &bad, K: 1},
		"bad time":          {Attr: "tp", Eq: &bad, K: 1},
		"no value":          {Attr: "uid", K: 1},
		"k zero":            {Attr: "uid", Eq: &bad, K: 0},
	} {
		if _, err := s.Query(context.Background(), q); !errors.Is(err, ErrBadQuery) {
			t.Errorf("%s: %v, want ErrBadQuery", name, err)
		}
	}
}

// TestOverloadStoresNothing: past the backlog bound a publish is refused
// with an OverloadedError carrying a retry hint, and is not stored; once
// delivery catches up publishes are taken again.
func TestOverloadStoresNothing(t *testing.T) {
	s := open(t, t.TempDir(), Config{MaxBacklog: 1})
	defer s.Close()
	ctx := context.Background()
	// A sink that never takes anything keeps the dispatcher's work small;
	// the bound is on what waits for the dispatcher, so hold it up.
	block := blockingSink{make(chan struct{})}
	for range 3 {
		if err := s.Subscribe(ctx, &subscriptions.SubscribeRequest{Uid: "a", Cell: cell("1"), Future: time.Hour}, block, func(*subscriptions.SubscribeResult, string) {}); err != nil {
			t.Fatal(err)
		}
	}
	var accepted []string
	var refused int
	for range 20 {
		err := s.Publish(ctx, &subscriptions.PublishRequest{Uid: "p", Cell: cell("1.1"), Expires: time.Hour}, func(res *subscriptions.PublishResult) {
			accepted = append(accepted, res.Pub.Pid())
		})
		var oe *delivery.OverloadedError
		switch {
		case err == nil:
		case errors.As(err, &oe) && oe.RetryAfter > 0:
			refused++
		default:
			t.Fatal(err)
		}
	}
	close(block.open)
	s.Drain()
	if refused == 0 {
		t.Fatal("no publish was refused while the dispatcher was held up")
	}
	p := "p"
	got, err := s.Query(context.Background(), Query{Attr: "uid", Eq: &p, K: 100})
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, g := range got {
		pids = append(pids, g.Pid())
	}
	slices.Sort(pids)
	slices.Sort(accepted)
	if !slices.Equal(pids, accepted) {
		t.Fatalf("stored %v, accepted %v: a refused publish was stored or an accepted one lost", pids, accepted)
	}
	if err := s.Publish(ctx, &subscriptions.PublishRequest{Uid: "p", Cell: cell("1.1"), Expires: time.Hour}, func(*subscriptions.PublishResult) {}); err != nil {
		t.Fatalf("publish after the backlog drained: %v", err)
	}
}

// blockingSink holds the dispatcher until the test closes open.
type blockingSink struct{ open chan struct{} }

func (k blockingSink) Notify(*delivery.Notification) bool { <-k.open; return true }
func (blockingSink) Ended(delivery.End)                   {}

// TestCloseClosesTheStore: the service owns its store; after Close the
// data is on disk and reopens, and Close again returns the same result.
func TestCloseClosesTheStore(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Config{})
	ctx := context.Background()
	var pid string
	if err := s.Publish(ctx, &subscriptions.PublishRequest{Uid: "p", Cell: cell("1.1"), Expires: time.Hour}, func(res *subscriptions.PublishResult) { pid = res.Pub.Pid() }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	s = open(t, dir, Config{})
	defer s.Close()
	var past []subscriptions.Publication
	if err := s.Subscribe(ctx, &subscriptions.SubscribeRequest{Uid: "a", Cell: cell("1"), Past: time.Hour}, nil, func(res *subscriptions.SubscribeResult, _ string) { past = res.Past }); err != nil {
		t.Fatal(err)
	}
	if len(past) != 1 || past[0].Pid() != pid {
		t.Fatalf("after reopening: %v, want %s", past, pid)
	}
}
