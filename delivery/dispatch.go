package delivery

import "github.com/seed84792017/cellcast/subscriptions"

// The dispatcher: publications leave the sequencer in stamp order and one
// goroutine fans each out to the routes of its matches, so a large
// fan-out delays later notifications but never the operations.

// dispatched is a publication the dispatcher fanned out while a SUBSCRIBE
// or RESUME was running, kept for that operation's route to catch up on.
type dispatched struct {
	res  *subscriptions.PublishResult
	body []byte
}

// release queues publications for the dispatcher, in stamp order.
func (h *Hub) release(rs []*subscriptions.PublishResult) {
	h.dmu.Lock()
	h.released = append(h.released, rs...)
	h.dmu.Unlock()
	h.dcond.Broadcast()
}

func (h *Hub) dispatcher() {
	defer close(h.stopped)
	var batch []*subscriptions.PublishResult
	for {
		h.dmu.Lock()
		h.busy = false
		h.dcond.Broadcast() // for Drain
		for len(h.released) == 0 && !h.closed {
			h.dcond.Wait()
		}
		if len(h.released) == 0 {
			h.dmu.Unlock()
			return
		}
		batch, h.released = h.released, batch[:0]
		h.busy, h.from = true, batch[0].Pub.Tp
		h.dmu.Unlock()
		for i, res := range batch {
			h.dispatch(res)
			batch[i] = nil
		}
	}
}

// Drain waits until every released publication has been dispatched.
func (h *Hub) Drain() {
	h.dmu.Lock()
	for len(h.released) > 0 || h.busy {
		h.dcond.Wait()
	}
	h.dmu.Unlock()
}

// dispatch hands res's notifications to the sinks. The dispatcher calls
// it in stamp order.
//
// It works per sink, not per match: one pass over the matches under the
// route lock looks each route up once and files its notification with
// the others for the same sink (fanout), then each sink gets them in one
// call (BatchSink.NotifyBatch: one queue lock for all of them) or, for a
// plain Sink, one Notify each.
func (h *Hub) dispatch(res *subscriptions.PublishResult) {
	h.published.Add(1)
	defer h.backlog.remove(res)
	if len(res.Matches) == 0 {
		return
	}
	p := &res.Pub
	body := h.cfg.Encode(p)
	var unrouted, skipped uint64
	f := &h.fan
	h.mu.RLock()
	h.keep(res, body)
	// The routes first, then what they say: each lookup and each route
	// is a cache miss in a large hub, and loads that do not wait on one
	// another overlap, where a lookup followed by its route's fields did
	// not.
	rs := f.lookup(h.routes, res.Matches)
	for i, r := range rs {
		s := &res.Matches[i]
		switch {
		case r == nil:
			// An ended route (expired or cancelled) also lands here; the
			// store stops matching it soon enough.
			unrouted++
		case p.Tp <= r.from:
			// Replayed by the resume that attached the route.
		case r.holding:
			r.hold(&Notification{Sid: r.sid, Uid: s.Uid, Seq: Seq(s.Ts, p), Pub: p, Body: body, Tag: r.tag})
		case r.lagging:
			skipped++
		default:
			f.add(r, s.Uid, Seq(s.Ts, p), p, body)
		}
	}
	sent, refused := f.deliver(h)
	h.mu.RUnlock()
	f.reset()
	h.dispatched.Add(sent)
	h.unrouted.Add(unrouted)
	h.refused.Add(refused)
	h.skipped.Add(skipped)
}

// keep files res in h.recent if a running SUBSCRIBE or RESUME may need
// it, and forgets what none can. The dispatcher calls it under h.mu's
// read lock.
func (h *Hub) keep(res *subscriptions.PublishResult, body []byte) {
	// An operation beginning after this load takes a bound above res's
	// stamp, so it cannot need res.
	floor := h.seq.oldestJoin.Load()
	i := 0
	for i < len(h.recent) && h.recent[i].res.Pub.Tp < floor {
		i++
	}
	if i > 0 {
		n := copy(h.recent, h.recent[i:])
		clear(h.recent[n:])
		h.recent = h.recent[:n]
	}
	if res.Pub.Tp > floor {
		h.recent = append(h.recent, dispatched{res, body})
	}
}
