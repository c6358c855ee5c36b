package owed

import (
	"cmp"
	"slices"
	"strings"
)

// Sub is an acknowledged SUBSCRIBE as the broker stamped it. Cell is a
// Dewey id in dotted form ("1.4.2").
type Sub struct {
	Uid            string
	Cell           string
	Ts, Tmin, Tmax int64 // Tmin = Ts − past, Tmax = Ts + future
	SelfJoin       bool
}

// Pub is an acknowledged PUBLISH.
type Pub struct {
	Cell     string
	Tp, Tmax int64 // Tmax = Tp + expires
}

// Kind tells a live notification from a past result.
type Kind uint8

const (
	Live Kind = iota // pushed after the publication came
	Past             // returned in the SUBSCRIBE's reply
)

func (k Kind) String() string {
	if k == Past {
		return "past"
	}
	return "live"
}

// Visit receives one owed pair: subscription subs[sub] is owed the
// publication stamped tp.
type Visit func(k Kind, sub int, tp int64)

// Walk names every pair owed by the operations, in stamp order of the
// later of the two. Stamps are distinct (one strictly increasing clock).
//
// The rule, from docs/design.md: cells overlap when one is an ancestor-or-self
// of the other. A SUBSCRIBE is owed, as past results, the stored
// publications (Tmax > Tp) with Tmin ≤ Tp and Tmax ≥ Ts in overlapping
// cells, less for a self-join the ones an earlier live subscription of the
// same user already met; it is stored when Tmax > Ts. A PUBLISH is owed to
// the stored subscriptions with Tp ≤ Tmax in overlapping cells (the
// subscription came first, so Tmin ≤ Ts < Tp). The load generator never
// unsubscribes, so there are no cancels.
func Walk(subs []Sub, pubs []Pub, visit Visit) {
	type event struct {
		t   int64
		idx int32
		sub bool
	}
	evs := make([]event, 0, len(subs)+len(pubs))
	for i := range subs {
		evs = append(evs, event{subs[i].Ts, int32(i), true})
	}
	for i := range pubs {
		evs = append(evs, event{pubs[i].Tp, int32(i), false})
	}
	slices.SortFunc(evs, func(a, b event) int { return cmp.Compare(a.t, b.t) })

	w := &walker{subs: subs, pubs: pubs, subIdx: newIndex(), pubIdx: newIndex(), byUser: map[string][]int32{}}
	for _, e := range evs {
		if e.sub {
			w.subscribe(int(e.idx), visit)
		} else {
			w.publish(int(e.idx), visit)
		}
	}
}

type walker struct {
	subs           []Sub
	pubs           []Pub
	subIdx, pubIdx *index
	byUser         map[string][]int32 // stored subscriptions, for the self-join rule
}

func (w *walker) subscribe(i int, visit Visit) {
	s := &w.subs[i]
	w.pubIdx.overlapping(s.Cell, func(j int32) bool {
		p := &w.pubs[j]
		if p.Tmax < s.Ts {
			return false // expired: no later subscription can have it
		}
		if s.Tmin <= p.Tp && !(s.SelfJoin && w.seen(p, s)) {
			visit(Past, i, p.Tp)
		}
		return true
	})
	if s.Tmax > s.Ts {
		w.subIdx.add(s.Cell, int32(i))
		w.byUser[s.Uid] = append(w.byUser[s.Uid], int32(i))
	}
}

func (w *walker) publish(j int, visit Visit) {
	p := &w.pubs[j]
	w.subIdx.overlapping(p.Cell, func(i int32) bool {
		s := &w.subs[i]
		if s.Tmax < p.Tp {
			return false // ended: no later publication can reach it
		}
		visit(Live, int(i), p.Tp)
		return true
	})
	if p.Tmax > p.Tp {
		w.pubIdx.add(p.Cell, int32(j))
	}
}

// seen reports whether an earlier subscription of s's user, live when s
// came, in a cell overlapping s's or itself a self-join, met p when the
// later of the two arrived.
func (w *walker) seen(p *Pub, s *Sub) bool {
	for _, k := range w.byUser[s.Uid] {
		x := &w.subs[k]
		if x.Ts >= s.Ts || x.Tmax < s.Ts || !(x.SelfJoin || overlaps(x.Cell, s.Cell)) {
			continue
		}
		at := max(p.Tp, x.Ts)
		if overlaps(p.Cell, x.Cell) && x.Tmin <= p.Tp && p.Tp <= x.Tmax && p.Tmax >= at && x.Tmax >= at {
			return true
		}
	}
	return false
}

// overlaps: one cell is an ancestor-or-self of the other.
func overlaps(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	return b == a || strings.HasPrefix(b, a+".")
}

// ancestors calls f with every proper ancestor of cell, the shortest first.
func ancestors(cell string, f func(string)) {
	for i := 0; i < len(cell); i++ {
		if cell[i] == '.' {
			f(cell[:i])
		}
	}
}
