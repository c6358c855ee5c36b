package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/delivery"
	"github.com/seed84792017/cellcast/service"
	"github.com/seed84792017/cellcast/subscriptions"
)

// Route states on the holder.
const (
	live     = iota
	resuming // a resume is on its way to the shard's owner
	lagging  // the sink refused a notification: CatchUp resumes it
	orphan   // the shard has no owner now: resumed when it has one
	opening  // the caller has not answered the client yet: held (open)
)

// maxHeld bounds the notifications an opening route holds; past it the
// route resumes once open, and its owner replays the rest.
var maxHeld = 4096

// route is, on the node holding a subscriber, where one of its
// subscriptions is served and what the subscriber last got.
type route struct {
	// What passing a notification on reads comes first, so that finding
	// the route by id brings it into the cache.
	id    uint64 // the number its owner's notifications name it by
	state int
	last  int64 // the last sequence number handed to sink
	sink  delivery.Sink
	sid   string
	uid   string
	shard string
	node  string // the owner it is routed through
	// While opening: what arrived for the route, in order.
	held     []notification
	overflow bool       // more arrived than maxHeld
	ended    *lostRoute // its owner ended it
}

// call is a request waiting for its reply.
type call struct {
	done chan *reply
	// onReply runs on the inbox goroutine before any later message from
	// the owner is read, so routes exist before their notifications, with
	// h.mu held, and only if the caller has not given up: a route made
	// after its caller had gone would never open or be abandoned.
	onReply func(*reply)
	shard   string
	// answered and abandoned, under h.mu: the reply was handled (onReply
	// ran), or the caller gave up first (then a reply that made a route
	// at the owner is undone there: detach).
	answered, abandoned bool
}

// holder keeps the routes of the subscriptions whose subscribers this
// node serves, sends operations to shards' owners, and passes their
// notifications on.
type holder struct {
	n    *Node
	next atomic.Uint64

	kept  *keptRefs   // past results owners asked this node to keep
	inbox batchReader // the NATS inbox's, read on its goroutine alone

	mu     sync.Mutex
	calls  map[string]*call
	routes map[string]*route // by sid
	byID   routeTable        // the same routes, by id
	owner  map[string]string // shard -> node, as the lease loop last read
	// recheck: since owners last walked the routes, one went live
	// through an owner other than the one owner names, or waits for one
	// (orphan). Otherwise the walk waits for the owners to change: at
	// tens of thousands of routes it held the lock every tick.
	recheck bool
	note    delivery.Notification // filled for each notification passed on
	found   []*route              // notify's, kept from call to call
	// gaps are the routes pass found missing a notification, marked
	// resuming: resumed once h.mu is released (repair).
	gaps []*route
}

func newHolder(n *Node) *holder {
	h := &holder{n: n, kept: newKeptRefs(time.Now().UnixNano()), calls: map[string]*call{}, routes: map[string]*route{}, owner: map[string]string{}}
	h.inbox = batchReader{notes: h.notify, ended: h.lost, replied: func(call string, data []byte) { h.replied(call, data, false) }}
	return h
}

// put makes r the route of its sid, in place of the one it had. h.mu is
// held.
func (h *holder) put(r *route) {
	h.drop(r.sid)
	h.routes[r.sid] = r
	h.byID.put(r)
}

// drop forgets the route of sid. h.mu is held.
func (h *holder) drop(sid string) {
	if r := h.routes[sid]; r != nil {
		h.byID.del(r.id)
		delete(h.routes, sid)
	}
}

// receive reads what is addressed to this node, in order.
func (h *holder) receive(m *nats.Msg) {
	kind := strings.TrimPrefix(m.Subject, nodeSubject+h.n.cfg.ID+".")
	switch {
	case kind == "n":
		if err := h.inbox.readBatch(m.Data); err != nil {
			h.n.log.Error("cluster: a damaged notification batch", "err", err)
		}
	case strings.HasPrefix(kind, "r."):
		h.replied(kind[2:], m.Data, m.Header.Get("Status") == "503")
	}
}

// replied hands the reply to call id to its caller; noOwner: no owner
// listened, and the caller tries again.
func (h *holder) replied(id string, data []byte, noOwner bool) {
	if noOwner {
		if c := h.take(id); c != nil {
			c.done <- nil
		}
		return
	}
	// Read even if the caller gave up: what the reply asks this node to
	// keep, later replies name.
	r, err := decodeReply(data, h.kept)
	switch {
	case errors.Is(err, errLostRef):
		h.n.counters.lostRefs.Add(1)
		h.kept.lost(time.Now().UnixNano())
		h.n.log.Warn("cluster: a reply named past results this node no longer keeps; the owners send them again", "err", err)
		r = &reply{Err: &wireError{Kind: "unavailable", Msg: err.Error()}}
	case err != nil:
		r = &reply{Err: &wireError{Kind: "internal", Msg: err.Error()}}
	}
	if c := h.take(id); c != nil {
		h.answer(c, r)
	}
}

// answered hands r, a reply from this node's own owner, to call id's
// caller.
func (h *holder) answered(id string, r *reply) {
	if c := h.take(id); c != nil {
		h.answer(c, r)
	}
}

// take removes call id and returns it; nil if its caller gave up.
func (h *holder) take(id string) *call {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.calls[id]
	delete(h.calls, id)
	return c
}

// answer runs c's onReply, unless its caller gave up, and hands r over.
func (h *holder) answer(c *call, r *reply) {
	h.mu.Lock()
	gone := c.abandoned
	if !gone {
		c.answered = true
		if c.onReply != nil {
			c.onReply(r)
		}
	}
	h.mu.Unlock()
	if gone && r != nil && r.Err == nil && r.Sid != "" {
		// The owner routes the subscription here, for a caller that is
		// not waiting any more: stop it.
		h.send(c.shard, &request{Op: opDetach, Holder: h.n.cfg.ID, Sids: []string{r.Sid}}, "")
	}
	c.done <- r
}

// giveUp marks c abandoned unless its reply was handled, and reports
// whether it was.
func (h *holder) giveUp(id string, c *call) (answered bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.calls, id)
	if !c.answered {
		c.abandoned = true
	}
	return c.answered
}

// attemptTimeout bounds the wait for one owner's reply. Past it the
// operation may or may not have run: the caller gets ErrUnavailable.
const attemptTimeout = 5 * time.Second

// call sends req to shard's owner and waits for the reply, retrying while
// no owner listens (the shard is moving) until ctx ends.
func (h *holder) call(ctx context.Context, shard string, req *request, onReply func(*reply)) (*reply, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, attemptTimeout)
		defer cancel()
	}
	backoff := 20 * time.Millisecond
	for {
		id := strconv.FormatUint(h.next.Add(1), 36)
		c := &call{done: make(chan *reply, 1), onReply: onReply, shard: shard}
		h.mu.Lock()
		h.calls[id] = c
		h.mu.Unlock()
		if err := h.send(shard, req, nodeSubject+h.n.cfg.ID+".r."+id); err != nil {
			h.forget(id)
			return nil, fmt.Errorf("%w: %w", service.ErrUnavailable, err)
		}
		// The shard's owner runs requests in the order they reach it,
		// and this node's requests to it leave in order: the client's
		// next request may start (gateway pipelining).
		req.stamped.Mark()
		select {
		case r := <-c.done:
			if r != nil {
				if r.Err != nil {
					return r, fromWire(r.Err)
				}
				return r, nil
			}
		case <-ctx.Done():
			h.giveUp(id, c) // a route its reply made, the caller abandons
			return nil, fmt.Errorf("%w: no answer from shard %s: %w", service.ErrUnavailable, shard, ctx.Err())
		}
		select { // no owner yet
		case <-time.After(backoff):
			backoff = min(2*backoff, 500*time.Millisecond)
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: shard %s has no owner: %w", service.ErrUnavailable, shard, ctx.Err())
		}
	}
}

// send hands r, answered on subject ("": no answer), to shard's owner:
// at once if this node owns the shard, else over NATS.
func (h *holder) send(shard string, r *request, subject string) error {
	if h.n.sendLocal(shard, r, subject) {
		return nil
	}
	h.n.counters.requests.Add(1)
	return h.n.nc.PublishMsg(&nats.Msg{Subject: shardSubject + shard, Reply: subject, Data: encodeRequest(r)})
}

func (h *holder) forget(id string) {
	h.mu.Lock()
	delete(h.calls, id)
	h.mu.Unlock()
}

// notify passes notifications on to their subscriptions' sinks, once, in
// order: a route that is resuming or lagging drops them (its resume
// replays them), and a sequence number not above the last one handed on
// is a repeat. One lock for a batch's run: at hundreds of notifications
// a message, a lock and unlock each showed in the holding node's CPU.
//
// The routes are found first, in a loop of their own: each lookup is
// likely a cache miss, and with nothing between them the processor
// waits for many at once, where between two sinks' work it waited for
// each alone (the holder's largest cost in profiles).
func (h *holder) notify(ws []notification) {
	h.mu.Lock()
	rs := h.found[:0]
	for i := range ws {
		rs = append(rs, h.byID.get(ws[i].Route))
	}
	for i := range ws {
		h.notifyOne(rs[i], &ws[i])
	}
	clear(rs)
	h.found = rs[:0]
	h.mu.Unlock()
	h.repair()
}

// repair resumes the routes pass found a gap in. h.mu is not held.
func (h *holder) repair() {
	h.mu.Lock()
	gaps := h.gaps
	h.gaps = nil
	h.mu.Unlock()
	for _, r := range gaps {
		go h.resume(r)
	}
}

// notifyOne is notify for one notification, to route r (nil: none).
// h.mu is held.
func (h *holder) notifyOne(r *route, w *notification) {
	if r != nil && r.state == opening {
		if len(r.held) < maxHeld {
			r.held = append(r.held, *w)
		} else {
			r.overflow = true
		}
		return
	}
	h.pass(r, w)
}

// pass hands w to r's sink unless r is not live or w is a repeat. A
// notification whose owner sent one after r's last before it (w.Prev
// above r.last) shows that a batch was lost on the way: r resumes from
// its last at its owner, which replays what is missing, in order, and
// w with it (repair). So the chain the sink hands on has no hole the
// subscriber cannot see. h.mu is held.
func (h *holder) pass(r *route, w *notification) {
	if r == nil || r.state != live || w.Seq <= r.last {
		return
	}
	if w.Prev > r.last {
		h.n.counters.gaps.Add(1)
		r.state = resuming
		h.gaps = append(h.gaps, r)
		return
	}
	h.note = delivery.Notification{Sid: r.sid, Uid: r.uid, Seq: w.Seq, Prev: r.last, Pub: w.Pub, Body: w.Body, Replayed: w.Replayed}
	if r.sink.Notify(&h.note) {
		r.last = w.Seq
	} else {
		r.state = lagging
	}
}

// lost ends a route its owner ended (window over, cancelled, moved). One
// that ended after notifications this node never got (its last is below
// the owner's) resumes first: the owner replays them (a subscription can
// be resumed for subscriptions.ResumeGrace after its end) and then ends
// the route again.
func (h *holder) lost(l *lostRoute) {
	h.mu.Lock()
	r := h.routes[l.Sid]
	if r == nil || r.node != l.Node || r.state == resuming {
		h.mu.Unlock()
		return
	}
	if r.state == opening {
		r.ended = l
		h.mu.Unlock()
		return
	}
	if r.state == live && l.Last > r.last && l.Why != delivery.EndMoved {
		h.n.counters.gaps.Add(1)
		r.state = resuming
		h.mu.Unlock()
		go h.resume(r)
		return
	}
	h.drop(l.Sid)
	h.mu.Unlock()
	h.end(r, l)
}

// end tells r's sink that its owner ended it.
func (h *holder) end(r *route, l *lostRoute) {
	r.sink.Ended(delivery.End{Sid: l.Sid, Uid: l.Uid, Why: l.Why, Last: r.last})
}

// opening returns route id if it is opening, else nil. h.mu is held.
func (h *holder) opening(id uint64) *route {
	if r := h.byID.get(id); r != nil && r.state == opening {
		return r
	}
	return nil
}

// open makes route id live once its caller has answered the client:
// what it held goes to the sink first, in order. A route that held too
// much resumes from what it passed on; one whose shard moved meanwhile
// resumes at the new owner.
func (h *holder) open(id uint64) {
	h.mu.Lock()
	r := h.opening(id)
	if r == nil {
		h.mu.Unlock()
		return
	}
	h.live(r, r.node)
	held := r.held
	r.held = nil
	for i := range held {
		h.pass(r, &held[i])
	}
	if l := r.ended; l != nil && !r.overflow {
		r.ended = nil
		h.drop(r.sid)
		h.mu.Unlock()
		h.end(r, l)
		return
	}
	r.ended = nil // with an overflow: the resume finds it ended
	again := r.state == live && (r.overflow || (h.owner[r.shard] != "" && h.owner[r.shard] != r.node))
	r.overflow = false
	if again {
		r.state = resuming
	}
	h.mu.Unlock()
	if again {
		go h.resume(r)
	}
	h.repair() // a held notification showed a gap
}

// abandon forgets route id if it is still opening, and tells its owner
// to stop routing it: the caller gave up just as the reply came.
func (h *holder) abandon(id uint64) {
	h.mu.Lock()
	r := h.opening(id)
	if r == nil {
		h.mu.Unlock()
		return
	}
	h.drop(r.sid)
	h.mu.Unlock()
	h.send(r.shard, &request{Op: opDetach, Holder: h.n.cfg.ID, Sids: []string{r.sid}}, "")
}

// owners learns who owns each shard, and resumes at its new owner every
// route whose owner changed or that waits for one.
func (h *holder) owners(m map[string]string) {
	h.mu.Lock()
	again := h.moved(m)
	h.mu.Unlock()
	for _, r := range again {
		go h.resume(r)
	}
}

// moved takes m as the shards' owners and returns the routes to resume
// at theirs, marked resuming. h.mu is held.
func (h *holder) moved(m map[string]string) []*route {
	if !h.recheck && maps.Equal(m, h.owner) {
		h.owner = m
		return nil
	}
	h.owner, h.recheck = m, false
	var again []*route
	for _, r := range h.routes {
		if (r.state == live && m[r.shard] != r.node) || (r.state == orphan && m[r.shard] != "") {
			r.state = resuming
			again = append(again, r)
		}
	}
	return again
}

// live makes r live through node. h.mu is held.
func (h *holder) live(r *route, node string) {
	r.state, r.node = live, node
	if h.owner[r.shard] != node {
		h.recheck = true // moved resumes it, unless the owner shows up
	}
}

// orphan marks r as waiting for its shard to have an owner. h.mu is
// held.
func (h *holder) orphan(r *route) {
	r.state = orphan // resumed once the lease loop sees an owner
	h.recheck = true
}

// resume routes r through its shard's current owner from its last
// sequence number: the owner replays what r missed, then goes live.
func (h *holder) resume(r *route) {
	h.mu.Lock()
	after, sid, uid := r.last, r.sid, r.uid
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), attemptTimeout)
	defer cancel()
	_, err := h.call(ctx, r.shard, &request{Op: opResume, Holder: h.n.cfg.ID, Sid: sid, After: after, Owner: uid, Route: r.id}, func(rep *reply) {
		if h.routes[sid] == r && rep.Err == nil { // h.mu is held
			h.live(r, rep.Node)
		}
	})
	if err == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.routes[sid] != r {
		return
	}
	if errors.Is(err, subscriptions.ErrUnknownSid) {
		h.drop(sid) // expired or cancelled meanwhile
		go r.sink.Ended(delivery.End{Sid: sid, Uid: uid, Why: delivery.EndWindow, Last: r.last})
		return
	}
	h.orphan(r)
	h.n.log.Warn("cluster: resuming a subscription at its shard's owner", "sid", sid, "shard", r.shard, "err", err)
}

func (h *holder) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, c := range h.calls {
		delete(h.calls, id)
		c.abandoned = true
		c.done <- &reply{Err: &wireError{Kind: "unavailable", Msg: "cluster: node closing"}}
	}
}
