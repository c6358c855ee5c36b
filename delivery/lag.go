package delivery

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/seed84792017/cellcast/subscriptions"
)

// A sink that cannot take a notification is not cut: its route turns
// lagging, the dispatcher skips it, and what it missed stays in the store.
// When the sink has room again it calls CatchUp, which replays each of its
// lagging subscriptions from the last notification it took, the way a
// client's resume does, and routes them live again. So a subscriber that
// falls behind a burst costs a bounded queue, not a growing one, and loses
// nothing that has not expired.

// lag marks r as lagging. The dispatcher calls it under the read lock
// (it is the only writer then), open under the write lock.
func (h *Hub) lag(r *route) {
	r.lagging = true
	if r.lagSince == 0 {
		r.lagSince = time.Now().UnixNano()
	}
	h.lagging[r.ts] = r
}

// replay hands r's sink what res replayed after r.last, oldest first (the
// store's order), while r is attached and holding. A refusal makes r
// lagging, so open skips what it held and a later CatchUp goes on from
// the last notification taken. It reports whether the sink refused.
func (h *Hub) replay(r *route, res *subscriptions.ReplayResult) bool {
	refused := false
	var sent uint64
	for i := range res.Pubs {
		p := &res.Pubs[i]
		n := &Notification{Sid: r.sid, Uid: res.Sub.Uid, Seq: Seq(res.Sub.Ts, p), Pub: p, Body: h.cfg.Encode(p), Replayed: true, Tag: r.tag}
		if n.Seq <= r.last {
			continue
		}
		n.Prev = r.last
		if !r.sink.Notify(n) {
			refused = true
			break
		}
		sent++
		r.last = n.Seq
	}
	h.dispatched.Add(sent)
	if refused {
		h.mu.Lock()
		if h.routes[r.ts] == r {
			h.lag(r)
		}
		h.mu.Unlock()
	}
	return refused
}

// CatchUp replays, to sink, what each of its lagging subscriptions missed
// and routes them live again. It stops at the first subscription the sink
// refuses again (that one stays lagging, for a later call) and returns
// how many subscriptions caught up. Call it without holding locks the
// sink's Notify takes.
func (h *Hub) CatchUp(ctx context.Context, sink Sink) (int, error) {
	h.mu.Lock()
	h.lags.caughtUp[sink] = time.Now().UnixNano()
	var todo []*route
	for _, r := range h.lagging {
		if r.sink == sink {
			todo = append(todo, r)
		}
	}
	h.mu.Unlock()
	n := 0
	for _, r := range todo {
		ok, err := h.catchUp(ctx, r)
		if err != nil {
			return n, err
		}
		if !ok {
			break
		}
		n++
	}
	return n, nil
}

// catchUp replays r's subscription from r.last and attaches a fresh route
// in its place, unless another sink took the subscription meanwhile. It
// reports false when the sink refused again.
func (h *Hub) catchUp(ctx context.Context, r *route) (bool, error) {
	h.mu.Lock()
	if h.routes[r.ts] != r || !r.lagging {
		h.mu.Unlock()
		return true, nil // resumed elsewhere, detached or expired
	}
	after, tmax, lagSince := r.last, r.tmax, r.lagSince
	h.mu.Unlock()
	l := h.seq.beginJoin()
	defer h.seq.finishJoin(l)
	res, err := h.cfg.Store.Replay(ctx, r.sid, r.ts+after)
	if errors.Is(err, subscriptions.ErrUnknownSid) {
		// Ended (or cancelled) longer ago than the resume grace: nothing
		// more is owed to a live route.
		h.mu.Lock()
		if h.routes[r.ts] == r {
			delete(h.routes, r.ts)
			delete(h.lagging, r.ts)
		}
		h.mu.Unlock()
		r.sink.Ended(End{Sid: r.sid, Uid: r.uid, Why: EndBehind, Last: after, Tag: r.tag})
		return true, nil
	}
	if err != nil {
		return false, err
	}
	nr := &route{sink: r.sink, tag: r.tag, sid: r.sid, uid: r.uid, ts: r.ts, from: res.Now, tmax: min(tmax, res.Sub.Tmax), last: after, lagSince: lagSince}
	if !h.attach(nr, r) {
		return true, nil
	}
	refused := h.replay(nr, res)
	h.open(nr)
	h.catchUps.Add(1)
	return !refused, nil
}

// Subscribers that fall behind together are an overload the backlog
// bound cannot see: what they miss waits in the store, not in a queue,
// while publishers go on being answered at once, until it expires there.
// So while a quarter or more of the sinks holding routes have had a
// subscription behind for longer than MaxLag, and go on catching up (a
// sink that stopped reading does not; its write deadline cuts it),
// Publish refuses with overloaded, and the subscribers catch up in the
// meantime. One slow client among many does not stop the publishers: it
// alone may lose what expires before it catches up.
type lagWatch struct {
	checked  atomic.Int64 // when behind was last worked out, unix ns
	behind   atomic.Bool
	caughtUp map[Sink]int64 // each sink's last CatchUp, unix ns; under the hub's write lock
}

// lagCheckEvery: how often admit looks at the lagging routes again.
const lagCheckEvery = 250 * time.Millisecond

// behindTogether reports whether subscribers are behind as described
// above, working it out at most every lagCheckEvery.
func (h *Hub) behindTogether() bool {
	w := &h.lags
	now := time.Now().UnixNano()
	last := w.checked.Load()
	if now-last < int64(lagCheckEvery) || !w.checked.CompareAndSwap(last, now) {
		return w.behind.Load()
	}
	maxLag := int64(h.cfg.MaxLag)
	h.mu.Lock() // the dispatcher writes lagging under the read lock
	stale := map[Sink]bool{}
	for _, r := range h.lagging {
		if r.lagSince != 0 && now-r.lagSince > maxLag && now-w.caughtUp[r.sink] < maxLag {
			stale[r.sink] = true
		}
	}
	holders := 0
	if len(stale) > 0 {
		sinks := map[Sink]bool{}
		for _, r := range h.routes {
			sinks[r.sink] = true
		}
		holders = len(sinks)
	}
	for s, t := range w.caughtUp {
		if now-t > int64(time.Minute) {
			delete(w.caughtUp, s) // a sink long gone or long caught up
		}
	}
	h.mu.Unlock()
	behind := len(stale) > 0 && 4*len(stale) >= holders
	w.behind.Store(behind)
	return behind
}
