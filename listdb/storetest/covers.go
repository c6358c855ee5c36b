package storetest

import (
	"context"
	"errors"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/geo"
	"github.com/seed84792017/cellcast/subscriptions"
)

// coverRec is what the cover oracle remembers of a stored record: its id,
// its cells as dotted strings, and its times.
type coverRec struct {
	id               string
	cells            []string
	t, tmax          int64
	cancelled, isPub bool
}

// dottedOverlap is the hierarchy rule by string prefix, written apart
// from dewey.Overlaps and subscriptions.Match, which the store uses.
func dottedOverlap(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y || strings.HasPrefix(x, y+".") || strings.HasPrefix(y, x+".") {
				return true
			}
		}
	}
	return false
}

// Covers checks circle covers against a brute-force oracle of its own:
// circles of random radius and cover size, plain cells mixed in,
// publications and subscriptions in both orders, cancels, flushes,
// compactions and a reopen. Every matching pair must come back exactly
// once in publish's notifications, subscribe's past results and replays,
// however many of the two records' cells overlap.
func Covers(t *testing.T, open Opener) {
	ops := 4000
	if *long {
		ops *= 10
	}
	r := newRun(t, open, 7, false)
	defer func() { r.store.Close() }()
	ctx := context.Background()
	var recs []*coverRec
	cellsOf := func() ([]subscriptions.Cell, []string) {
		var cells []subscriptions.Cell
		lat, lng := r.near(r.rng)
		if r.rng.Intn(3) == 0 {
			id, err := geo.PointCell(lat, lng, r.rng.Intn(r.maxDepth()))
			if err != nil {
				t.Fatal(err)
			}
			cells = []subscriptions.Cell{{NS: subscriptions.NSCell, ID: id}}
		} else {
			c, err := geo.NewCircle(lat, lng, 10*float64(int(1)<<r.rng.Intn(12)))
			if err != nil {
				t.Fatal(err)
			}
			ids, err := c.Cover(1+r.rng.Intn(subscriptions.MaxCover), r.maxDepth()-1)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				cells = append(cells, subscriptions.Cell{NS: subscriptions.NSCell, ID: id})
			}
		}
		dotted := make([]string, len(cells))
		for i, c := range cells {
			dotted[i] = c.ID.String()
		}
		return cells, dotted
	}
	// count checks that got names each id of want exactly once, and
	// nothing else.
	count := func(i int, what string, got []string, want map[string]bool) {
		seen := map[string]int{}
		for _, id := range got {
			seen[id]++
			if !want[id] {
				t.Fatalf("op %d %s: %s reported but does not match", i, what, id)
			}
			if seen[id] > 1 {
				t.Fatalf("op %d %s: %s reported %d times", i, what, id, seen[id])
			}
		}
		for id := range want {
			if seen[id] == 0 {
				t.Fatalf("op %d %s: %s matches but was not reported", i, what, id)
			}
		}
	}
	for i := 0; i < ops; i++ {
		switch p := r.rng.Intn(100); {
		case p < 42:
			cells, dotted := cellsOf()
			req := &subscriptions.SubscribeRequest{Uid: "u", Cover: cells,
				Past: time.Duration(r.rng.Intn(20)) * time.Second, Future: time.Duration(r.rng.Intn(20)) * time.Second}
			res, err := r.store.Subscribe(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			now, want := res.Sub.Ts, map[string]bool{}
			for _, q := range recs {
				if q.isPub && q.t >= res.Sub.Tmin && q.tmax >= now && dottedOverlap(q.cells, dotted) {
					want[q.id] = true
				}
			}
			var got []string
			for _, q := range res.Past {
				got = append(got, q.Pid())
			}
			count(i, "subscribe "+res.Sub.Sid(), got, want)
			if res.Stored {
				recs = append(recs, &coverRec{id: res.Sub.Sid(), cells: dotted, t: now, tmax: res.Sub.Tmax})
			}
		case p < 84:
			cells, dotted := cellsOf()
			res, err := r.store.Publish(ctx, &subscriptions.PublishRequest{Uid: "u", Cover: cells, Expires: time.Duration(r.rng.Intn(30)) * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			now, want := res.Pub.Tp, map[string]bool{}
			for _, s := range recs {
				if !s.isPub && !s.cancelled && s.tmax >= now && dottedOverlap(s.cells, dotted) {
					want[s.id] = true
				}
			}
			var got []string
			for _, s := range res.Matches {
				for _, r := range recs { // the subscription stamped s.Ts
					if !r.isPub && r.t == s.Ts {
						got = append(got, r.id)
					}
				}
			}
			count(i, "publish "+res.Pub.Pid(), got, want)
			if res.Stored {
				recs = append(recs, &coverRec{id: res.Pub.Pid(), cells: dotted, t: now, tmax: res.Pub.Tmax, isPub: true})
			}
		case p < 88:
			// Cancel a live subscription: no later publication reaches it
			// through any of its cells, and it is gone by its id.
			for _, s := range recs {
				if !s.isPub && !s.cancelled && s.tmax > r.sc.Peek()+1 {
					if err := r.store.Unsubscribe(ctx, s.id, nil); err != nil {
						t.Fatalf("op %d unsubscribe %s: %v", i, s.id, err)
					}
					s.cancelled = true
					if _, err := r.store.Lookup(ctx, s.id); !errors.Is(err, subscriptions.ErrUnknownSid) {
						t.Fatalf("op %d: cancelled %s still found: %v", i, s.id, err)
					}
					break
				}
			}
		case p < 92:
			// Replay a live subscription from its start: every publication
			// stamped after it that met it and is still live, once.
			for j := len(recs) - 1; j >= 0; j-- {
				s := recs[j]
				if s.isPub || s.cancelled || s.tmax <= r.sc.Peek()+1 {
					continue
				}
				res, err := r.store.Replay(ctx, s.id, 0)
				if err != nil {
					t.Fatalf("op %d replay %s: %v", i, s.id, err)
				}
				want := map[string]bool{}
				for _, q := range recs {
					if q.isPub && q.t > s.t && q.t <= s.tmax && q.tmax >= res.Now && dottedOverlap(q.cells, s.cells) {
						want[q.id] = true
					}
				}
				var got []string
				for _, q := range res.Pubs {
					got = append(got, q.Pid())
				}
				count(i, "replay "+s.id, got, want)
				break
			}
		case p < 98:
			r.sc.Advance(time.Duration(r.rng.Intn(800)) * time.Millisecond)
		case p < 99:
			if err := r.store.Backend().Flush(); err != nil {
				t.Fatal(err)
			}
		default:
			if r.rng.Intn(3) == 0 {
				r.reopen()
			} else if err := r.store.Backend().Compact(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// CoverValidation checks that a bad cover is a typed bad request and
// stores nothing at any of its cells.
func CoverValidation(t *testing.T, open Opener) {
	r := newRun(t, open, 9, false)
	defer func() { r.store.Close() }()
	ctx := context.Background()
	cells := r.circleCover(rand.New(rand.NewSource(1)), subscriptions.MaxCover+1)
	_, err := r.store.Subscribe(ctx, &subscriptions.SubscribeRequest{Uid: "u", Cover: cells, Future: time.Minute})
	if !errors.Is(err, subscriptions.ErrCover) || !errors.Is(err, subscriptions.ErrBadRequest) {
		t.Fatalf("subscribe on %d cells: %v", len(cells), err)
	}
	_, err = r.store.Publish(ctx, &subscriptions.PublishRequest{Uid: "u", Cover: cells, Expires: time.Minute})
	if !errors.Is(err, subscriptions.ErrCover) {
		t.Fatalf("publish on %d cells: %v", len(cells), err)
	}
	root := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1}}
	for _, c := range append(cells, root) {
		pr, err := r.store.Publish(ctx, &subscriptions.PublishRequest{Uid: "w", Cell: c})
		if err != nil || len(pr.Matches) != 0 {
			t.Fatalf("a refused subscription was stored at %v: %v %v", c, pr, err)
		}
		sr, err := r.store.Subscribe(ctx, &subscriptions.SubscribeRequest{Uid: "w", Cell: c, Past: time.Minute})
		if err != nil || len(sr.Past) != 0 {
			t.Fatalf("a refused publication was stored at %v: %v %v", c, sr, err)
		}
	}
}
