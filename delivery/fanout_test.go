package delivery

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/seed84792017/cellcast/subscriptions"
)

// capSink takes notifications until its room runs out, recording them;
// room < 0 never runs out.
type capSink struct {
	room int
	got  []Notification
}

func (k *capSink) Notify(n *Notification) bool {
	if k.room == 0 {
		return false
	}
	k.room--
	k.got = append(k.got, *n)
	return true
}

func (k *capSink) Ended(End) {}

// capBatchSink is capSink taking batches: a prefix, as much as fits.
type capBatchSink struct{ capSink }

func (k *capBatchSink) NotifyBatch(ns []Notification) int {
	n := len(ns)
	if k.room >= 0 {
		n = min(n, k.room)
		k.room -= n
	}
	k.got = append(k.got, ns[:n]...)
	return n
}

// TestFanoutMatchesPerMatchDelivery: grouping a publication's matches by
// sink delivers to each sink exactly what handing each match to its
// route's sink one at a time did, in the same order, with the same Prev
// chain, and lags the same routes: random publications over random
// routes on many sinks (plain and batch, some running out of room), many
// sinks enough to take fanout's map.
func TestFanoutMatchesPerMatchDelivery(t *testing.T) {
	for seed := range int64(200) {
		rng := rand.New(rand.NewSource(seed))
		nSinks := 1 + rng.Intn(20)
		nRoutes := 1 + rng.Intn(60)
		type world struct {
			h      *Hub
			sinks  []Sink
			routes []*route
		}
		mk := func() *world {
			r := rand.New(rand.NewSource(seed))
			w := &world{h: &Hub{lagging: map[int64]*route{}}}
			for i := range nSinks {
				room := -1
				if r.Intn(3) == 0 {
					room = r.Intn(10)
				}
				if i%2 == 0 {
					w.sinks = append(w.sinks, &capBatchSink{capSink{room: room}})
				} else {
					w.sinks = append(w.sinks, &capSink{room: room})
				}
			}
			for i := range nRoutes {
				w.routes = append(w.routes, &route{sink: w.sinks[r.Intn(nSinks)], sid: fmt.Sprint("s", i), ts: int64(i + 1), tag: uint64(i)})
			}
			return w
		}
		perMatch, grouped := mk(), mk()
		for pub := range 20 {
			p := &subscriptions.Publication{Tp: int64(1000 * (pub + 1))}
			body := []byte(fmt.Sprint(pub))
			// Distinct routes in random order, the lagging ones skipped as
			// dispatch skips them.
			order := rng.Perm(nRoutes)[:rng.Intn(nRoutes+1)]
			// The old dispatch: one Notify per match.
			for _, i := range order {
				r := perMatch.routes[i]
				if r.lagging {
					continue
				}
				var n Notification
				if r.sink.Notify(n.set(r, "u", p.Tp-r.ts, p, body)) {
					r.last = p.Tp - r.ts
				} else {
					perMatch.h.lag(r)
				}
			}
			f := &grouped.h.fan
			for _, i := range order {
				r := grouped.routes[i]
				if r.lagging {
					continue
				}
				f.add(r, "u", p.Tp-r.ts, p, body)
			}
			f.deliver(grouped.h)
			f.reset()
		}
		for i := range nSinks {
			var a, b []Notification
			switch k := perMatch.sinks[i].(type) {
			case *capSink:
				a, b = k.got, grouped.sinks[i].(*capSink).got
			case *capBatchSink:
				a, b = k.got, grouped.sinks[i].(*capBatchSink).got
			}
			// Across sinks the order may differ; per sink it must not.
			if !slices.EqualFunc(a, b, func(x, y Notification) bool {
				return x.Sid == y.Sid && x.Seq == y.Seq && x.Prev == y.Prev && x.Tag == y.Tag && x.Pub == nil == (y.Pub == nil) && string(x.Body) == string(y.Body)
			}) {
				t.Fatalf("seed %d sink %d: per match %v, grouped %v", seed, i, a, b)
			}
		}
		for i := range nRoutes {
			a, b := perMatch.routes[i], grouped.routes[i]
			if a.last != b.last || a.lagging != b.lagging {
				t.Fatalf("seed %d route %d: per match last %d lagging %v, grouped last %d lagging %v", seed, i, a.last, a.lagging, b.last, b.lagging)
			}
		}
		if len(perMatch.h.lagging) != len(grouped.h.lagging) {
			t.Fatalf("seed %d: %d lagging per match, %d grouped", seed, len(perMatch.h.lagging), len(grouped.h.lagging))
		}
		// Nothing left pointing at the publications.
		for _, g := range grouped.h.fan.groups {
			if g.sink != nil || len(g.ns) != 0 || len(g.routes) != 0 {
				t.Fatalf("seed %d: a group kept %v", seed, g)
			}
		}
	}
}

// dropSink takes everything and keeps nothing; dropBatchSink takes
// batches.
type dropSink struct{ n int }

func (k *dropSink) Notify(*Notification) bool { k.n++; return true }
func (k *dropSink) Ended(End)                 {}

type dropBatchSink struct{ dropSink }

func (k *dropBatchSink) NotifyBatch(ns []Notification) int { k.n += len(ns); return len(ns) }

// BenchmarkFanout is the dispatcher's cost per notification: 100,000
// routes on 4 sinks, publications matching 100 of them at random,
// dispatched one by one (the sinks take and drop). "plain" sinks take one
// Notify per match, "batch" sinks one NotifyBatch per publication.
//
//	go test ./delivery -run '^$' -bench Fanout
func BenchmarkFanout(b *testing.B) {
	for _, batch := range []bool{false, true} {
		name := "plain"
		if batch {
			name = "batch"
		}
		b.Run(name, func(b *testing.B) {
			h := New(Config{Clock: subscriptions.NewFakeClock(0), Encode: func(p *subscriptions.Publication) []byte { return nil }})
			defer h.Close()
			sinks := make([]Sink, 4)
			for i := range sinks {
				if batch {
					sinks[i] = &dropBatchSink{}
				} else {
					sinks[i] = &dropSink{}
				}
			}
			const nRoutes, fan = 100_000, 100
			for i := range nRoutes {
				r := &route{sink: sinks[i%4], sid: fmt.Sprint("s", i), ts: int64(i + 1), tmax: 1 << 62}
				h.attach(r, nil)
				h.open(r)
			}
			rng := rand.New(rand.NewSource(1))
			res := make([]*subscriptions.PublishResult, 256)
			for i := range res {
				res[i] = &subscriptions.PublishResult{Pub: subscriptions.Publication{Tp: 1 << 40}}
				seen := map[int64]bool{}
				for len(seen) < fan {
					ts := int64(1 + rng.Intn(nRoutes))
					if !seen[ts] {
						seen[ts] = true
						res[i].Matches = append(res[i].Matches, subscriptions.Matched{Ts: ts, Uid: "u"})
					}
				}
			}
			b.ResetTimer()
			for i := range b.N {
				r := res[i%len(res)]
				h.backlog.stored(r)
				h.dispatch(r)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*fan), "ns/notification")
		})
	}
}
