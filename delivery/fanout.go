package delivery

import "github.com/seed84792017/cellcast/subscriptions"

// A BatchSink is a Sink that takes a publication's notifications to many
// of its routes in one call. The dispatcher groups a publication's
// matches by sink and hands each BatchSink its share at once, so that the
// sink takes its queue's lock once per publication, not once per match.
type BatchSink interface {
	Sink
	// NotifyBatch queues ns, in order, as Notify would queue each of them,
	// and returns how many it took: ns[:k] are taken, ns[k:] refused (a
	// sink that runs out of room refuses the rest). The notifications are
	// one publication's, to distinct subscriptions. Like Notify it runs
	// under the hub's route lock, does no I/O and never blocks; ns is the
	// caller's again once it returns.
	NotifyBatch(ns []Notification) int
}

// fanout files one publication's notifications by sink, for dispatch.
// Only the dispatcher uses it, and it keeps its storage from one
// publication to the next: a fan-out allocates nothing per match.
type fanout struct {
	groups  []sinkGroup
	n       int          // groups in use
	index   map[Sink]int // sink → group, once there are more than a few
	last    int          // the group found last: matches often come in runs
	routes  []*route     // lookup's, by match
	touched int64        // lookup's, kept so that its loads are made
}

// lookup returns the route of each match (nil: none), in storage of f's
// that reset clears.
func (f *fanout) lookup(routes map[int64]*route, ms []subscriptions.Matched) []*route {
	rs := f.routes[:0]
	for i := range ms {
		rs = append(rs, routes[ms[i].Ts])
	}
	// Touch each route, so that their misses overlap here rather than one
	// at a time in dispatch's loop, which branches on each.
	var t int64
	for _, r := range rs {
		if r != nil {
			t |= r.from
		}
	}
	f.touched = t
	f.routes = rs
	return rs
}

// sinkGroup is one sink's share of a publication: routes[i] gets ns[i].
type sinkGroup struct {
	sink   Sink
	ns     []Notification
	routes []*route
}

// fewSinks: up to this many sinks in one fan-out, a linear scan finds a
// sink's group faster than a map.
const fewSinks = 8

// group returns the group of sink, starting one if it has none.
func (f *fanout) group(sink Sink) *sinkGroup {
	if f.last < f.n && f.groups[f.last].sink == sink {
		return &f.groups[f.last]
	}
	i := -1
	if f.index != nil {
		if j, ok := f.index[sink]; ok {
			i = j
		}
	} else {
		for j := range f.n {
			if f.groups[j].sink == sink {
				i = j
				break
			}
		}
	}
	if i < 0 {
		i = f.n
		f.n++
		if i == len(f.groups) {
			f.groups = append(f.groups, sinkGroup{})
		}
		f.groups[i].sink = sink
		switch {
		case f.index != nil:
			f.index[sink] = i
		case f.n > fewSinks:
			f.index = make(map[Sink]int, 2*f.n)
			for j := range f.n {
				f.index[f.groups[j].sink] = j
			}
		}
	}
	f.last = i
	return &f.groups[i]
}

// add files r's live notification of p.
func (f *fanout) add(r *route, uid string, seq int64, p *subscriptions.Publication, body []byte) {
	g := f.group(r.sink)
	g.ns = append(g.ns, Notification{Sid: r.sid, Uid: uid, Seq: seq, Prev: r.last, Pub: p, Body: body, Tag: r.tag})
	g.routes = append(g.routes, r)
}

// deliver hands every group to its sink and settles what each route's
// sink took or refused. The dispatcher calls it under the read lock.
func (f *fanout) deliver(h *Hub) (sent, refused uint64) {
	for gi := range f.n {
		g := &f.groups[gi]
		b, ok := g.sink.(BatchSink)
		if !ok {
			// One at a time, each refusal its own route's alone.
			for i, r := range g.routes {
				if g.sink.Notify(&g.ns[i]) {
					r.last = g.ns[i].Seq
					sent++
				} else {
					h.lag(r)
					refused++
				}
			}
			continue
		}
		took := min(max(b.NotifyBatch(g.ns), 0), len(g.ns))
		for i, r := range g.routes {
			if i < took {
				r.last = g.ns[i].Seq
			} else {
				h.lag(r)
			}
		}
		sent += uint64(took)
		refused += uint64(len(g.routes) - took)
	}
	return sent, refused
}

// reset empties the groups for the next publication, letting go of what
// they pointed at (a sink gone stays referenced by nothing).
func (f *fanout) reset() {
	for i := range f.n {
		g := &f.groups[i]
		clear(g.ns)
		clear(g.routes)
		g.ns, g.routes, g.sink = g.ns[:0], g.routes[:0], nil
	}
	f.n, f.last = 0, 0
	clear(f.routes)
	f.routes = f.routes[:0]
	if f.index != nil {
		clear(f.index)
	}
}
