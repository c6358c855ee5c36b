package delivery

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed84792017/cellcast/subscriptions"
)

// ErrForbidden: the subscription belongs to another user.
var ErrForbidden = errors.New("subscription belongs to another user")

// ErrBadSeq: a resume point below zero.
var ErrBadSeq = fmt.Errorf("%w: resume point must be zero or more", subscriptions.ErrBadRequest)

// A Sink receives notifications for the subscriptions routed to it.
type Sink interface {
	// Notify queues n without blocking and without I/O (a socket write,
	// a NATS publish): a goroutine of the sink's own sends. It returns
	// false when the sink cannot take it (gone, or its queue is full). It
	// runs under the hub's route lock, so it must not call the hub, and
	// every subscribe, unsubscribe and expiry waits while it runs.
	// n is the caller's again once Notify returns: a sink copies what it
	// keeps (the dispatcher fills one Notification for every match).
	Notify(n *Notification) bool
	// Ended tells the sink that e's subscription no longer routes to it,
	// and why, after every notification it was owed before the end. It
	// is called with no hub lock held.
	Ended(e End)
}

// A Notification is one publication for one subscription. Body is the
// publication as the hub's Encode rendered it, shared by every
// notification of that publication: sinks must not modify it.
type Notification struct {
	Sid string
	Uid string // the subscriber
	Seq int64
	// Prev is the Seq of the notification of this subscription that its
	// sink took before this one (0: none; after a resume, the resume
	// point). A subscriber that last received Prev has missed nothing;
	// one that last received less has a gap to resume from. Sequence
	// numbers are stamps, not counters, so the chain is what makes a gap
	// visible on a transport that may drop messages (NATS).
	Prev int64
	Pub  *subscriptions.Publication
	Body []byte
	// Replayed: the notification comes from the store, by a resume or a
	// catch-up, not straight from its publication's dispatch.
	Replayed bool
	// Tag is the tag the route was made with (SubscribeTagged,
	// ResumeTagged; 0 otherwise): a sink serving many routes tells them
	// apart by it without a lookup of its own.
	Tag uint64
}

// set makes n a live notification and returns it.
func (n *Notification) set(r *route, uid string, seq int64, p *subscriptions.Publication, body []byte) *Notification {
	*n = Notification{Sid: r.sid, Uid: uid, Seq: seq, Prev: r.last, Pub: p, Body: body, Tag: r.tag}
	return n
}

// Seq is the sequence number of p's notification for the subscription
// stamped ts.
func Seq(ts int64, p *subscriptions.Publication) int64 { return p.Tp - ts }

// Config shapes a Hub.
type Config struct {
	Store subscriptions.Store
	// Clock must be the clock that stamps Store's operations.
	Clock subscriptions.Clock
	// Encode renders a publication once for all its notifications.
	Encode func(*subscriptions.Publication) []byte
	// MaxBacklog and MaxBacklogBytes bound the notifications stored
	// publications still owe, queued for the dispatcher: past either,
	// Publish refuses with an *OverloadedError. Defaults 1,000,000 and
	// 256 MiB.
	MaxBacklog      int
	MaxBacklogBytes int64
	// MaxLag: while subscribers are behind for longer than this together
	// (lag.go), Publish refuses with an *OverloadedError. Default 2 s.
	MaxLag time.Duration
}

// route is where a subscription's notifications go: to sink, for
// publications stamped after from, until tmax.
//
// A hub holds one per connected subscription, so it stays small (go test
// ./delivery -bench RouteMemory: under 200 bytes with its strings and its
// places in the hub's maps).
type route struct {
	sink Sink
	tag  uint64 // Notification.Tag and End.Tag
	sid  string
	uid  string
	ts   int64
	from int64
	tmax int64
	// While holding, the route's SUBSCRIBE or RESUME has not answered
	// yet, and notifications wait in held (allocated only then): the
	// answer goes first. Only the dispatcher appends, under the hub's
	// read lock; the rest happens under its write lock.
	held *[]*Notification
	// last is the sequence number of the last notification the sink
	// took. A refused notification makes the route lagging: the
	// dispatcher skips it until CatchUp replays from last. Written by the
	// dispatcher under the read lock, otherwise under the write lock.
	last                        int64
	holding, lagging, cancelled bool // cancelled: Unsubscribe cut tmax to the cancel; under the write lock
	// lagSince is when the subscription fell behind (unix ns), kept by
	// the route of its catch-up until it has caught up; 0 while it is
	// not behind. Written with lagging.
	lagSince int64
}

func (r *route) hold(n *Notification) {
	if r.held == nil {
		r.held = new([]*Notification)
	}
	*r.held = append(*r.held, n)
}

func (r *route) heldList() []*Notification {
	if r.held == nil {
		return nil
	}
	return *r.held
}

// Stats are the hub's counters.
type Stats struct {
	Routes      int
	Dispatched  uint64 // notifications handed to sinks
	Unrouted    uint64 // matches whose subscription had no sink (resume replays them)
	Refused     uint64 // notifications a sink could not take
	Waiting     int    // finished publications not yet dispatched
	Publishings uint64 // publications dispatched
	Backlog     int64  // notifications owed by publications not yet dispatched
	Lagging     int    // routes whose sink refused and that wait to catch up
	Skipped     uint64 // notifications not handed to a lagging route (its catch-up replays them)
	CatchUps    uint64 // lagging routes caught up from the store
	Overloaded  uint64 // publications refused while the backlog was over its bound
}

// Hub routes notifications. It is safe for concurrent use.
type Hub struct {
	cfg Config
	seq sequencer

	mu     sync.RWMutex
	routes map[int64]*route // by subscription stamp, unique per store
	// ending lists the routes by the second their subscription ends, for
	// Expire; swept is the last second Expire cleared.
	ending map[int64][]int64
	swept  int64
	// recent holds, in stamp order, the publications dispatched since the
	// oldest running SUBSCRIBE or RESUME began: publications do not wait
	// for those, whose routes catch up from here instead. Written by the
	// dispatcher under the read lock, read under the write lock.
	recent []dispatched
	// lagging holds the routes waiting to catch up, by subscription stamp.
	// The dispatcher adds under the read lock (it is the only writer
	// then); everything else happens under the write lock.
	lagging map[int64]*route
	// fan is the dispatcher's own scratch space for grouping a
	// publication's notifications by sink (fanout.go).
	fan fanout

	dispatched, unrouted, refused, published, skipped, catchUps, overloaded atomic.Uint64
	backlog                                                                 backlog
	lags                                                                    lagWatch

	// The dispatcher fans released publications out, in order, on its own
	// goroutine, so a large fan-out never holds up operations starting.
	dmu      sync.Mutex
	dcond    *sync.Cond
	released []*subscriptions.PublishResult
	busy     bool
	from     int64 // while busy: the stamp of the first publication being dispatched
	closed   bool
	stopped  chan struct{}
}

// New returns a hub over cfg.Store, with its dispatcher running until
// Close.
func New(cfg Config) *Hub {
	if cfg.MaxBacklog == 0 {
		cfg.MaxBacklog = 1_000_000
	}
	if cfg.MaxBacklogBytes == 0 {
		cfg.MaxBacklogBytes = 256 << 20
	}
	if cfg.MaxLag == 0 {
		cfg.MaxLag = 2 * time.Second
	}
	h := &Hub{cfg: cfg, routes: map[int64]*route{}, ending: map[int64][]int64{}, lagging: map[int64]*route{},
		lags: lagWatch{caughtUp: map[Sink]int64{}}}
	h.seq.clock = cfg.Clock
	h.seq.pubs.init()
	h.seq.joins.init()
	h.seq.release = h.release
	h.dcond = sync.NewCond(&h.dmu)
	h.stopped = make(chan struct{})
	go h.dispatcher()
	return h
}

// Close dispatches what was released and stops the dispatcher. Call it
// once no operation runs any more.
func (h *Hub) Close() {
	h.dmu.Lock()
	h.closed = true
	h.dmu.Unlock()
	h.dcond.Broadcast()
	<-h.stopped
}

// Stats returns the counters.
func (h *Hub) Stats() Stats {
	h.mu.Lock() // the dispatcher writes lagging under the read lock
	n, lag := len(h.routes), len(h.lagging)
	h.mu.Unlock()
	h.seq.mu.Lock()
	w := h.seq.ready.Len()
	h.seq.mu.Unlock()
	h.dmu.Lock()
	w += len(h.released)
	h.dmu.Unlock()
	return Stats{Routes: n, Dispatched: h.dispatched.Load(), Unrouted: h.unrouted.Load(),
		Refused: h.refused.Load(), Waiting: w, Publishings: h.published.Load(), Backlog: h.backlog.n.Load(),
		Lagging: lag, Skipped: h.skipped.Load(), CatchUps: h.catchUps.Load(), Overloaded: h.overloaded.Load()}
}

// Subscribe stores the subscription and, if it has a future, routes it to
// sink (when not nil). answer runs with the result and the subscription's
// id before any notification of the subscription reaches sink.
func (h *Hub) Subscribe(ctx context.Context, req *subscriptions.SubscribeRequest, sink Sink, answer func(res *subscriptions.SubscribeResult, sid string)) error {
	return h.SubscribeTagged(ctx, req, sink, 0, answer)
}

// SubscribeTagged is Subscribe with the route's notifications and end
// carrying tag, for a sink that serves many routes.
func (h *Hub) SubscribeTagged(ctx context.Context, req *subscriptions.SubscribeRequest, sink Sink, tag uint64, answer func(res *subscriptions.SubscribeResult, sid string)) error {
	l := h.seq.beginJoin()
	defer h.seq.finishJoin(l)
	res, err := h.cfg.Store.Subscribe(ctx, req)
	if err != nil {
		return err
	}
	sid := res.Sub.Sid() // one copy, shared by the route and the sink
	if !res.Stored || sink == nil {
		answer(res, sid)
		return nil
	}
	r := &route{sink: sink, tag: tag, sid: sid, uid: res.Sub.Uid, ts: res.Sub.Ts, from: res.Sub.Ts, tmax: res.Sub.Tmax}
	h.attach(r, nil)
	answer(res, sid)
	h.open(r)
	return nil
}

// Publish stores the publication; its notifications follow in stamp order.
// answer runs with the result before they are dispatched.
func (h *Hub) Publish(ctx context.Context, req *subscriptions.PublishRequest, answer func(*subscriptions.PublishResult)) error {
	if err := h.admit(); err != nil {
		return err
	}
	l := h.seq.beginPub()
	res, err := h.cfg.Store.Publish(ctx, req)
	if err != nil {
		h.backlog.stored(nil)
		h.seq.finish(l, nil)
		return err
	}
	h.backlog.stored(res)
	answer(res)
	h.seq.finish(l, res)
	return nil
}

// PublishStaged is Publish for an owner that must make the publication
// durable elsewhere before anyone hears of it (a cluster shard's log): it
// stores and answers as Publish does, but releases nothing for dispatch
// until commit(true); commit(false) drops it, and nobody is notified of
// it. Later publications wait for it meanwhile, so dispatch keeps stamp
// order. commit must be called once, whatever happens.
func (h *Hub) PublishStaged(ctx context.Context, req *subscriptions.PublishRequest, answer func(*subscriptions.PublishResult)) (commit func(ok bool), err error) {
	if err := h.admit(); err != nil {
		return nil, err
	}
	l := h.seq.beginPub()
	res, err := h.cfg.Store.Publish(ctx, req)
	if err != nil {
		h.backlog.stored(nil)
		h.seq.finish(l, nil)
		return nil, err
	}
	h.backlog.stored(res)
	answer(res)
	return func(ok bool) {
		if !ok {
			h.backlog.remove(res)
			res = nil
		}
		h.seq.finish(l, res)
	}, nil
}

// owned checks that owner made s. Every caller names the user it acts
// for (a request's, under auth its token's): an empty one is nobody, not
// anyone, so a request that came without one, over any transport or from
// another node, cannot act on another's subscription.
func owned(s subscriptions.Subscription, owner string) error {
	if s.Uid != owner {
		return fmt.Errorf("%w: %s", ErrForbidden, s.Sid())
	}
	return nil
}

// Unsubscribe cancels sid, which owner must have made; stamped hears
// when the cancel has its stamp. Its route ends with the cancel:
// publications stamped before it still reach the sink, then Expire drops
// the route.
func (h *Hub) Unsubscribe(ctx context.Context, sid, owner string, stamped subscriptions.Stamped) error {
	s, err := h.cfg.Store.Lookup(ctx, sid)
	if err != nil {
		return err
	}
	if err := owned(s, owner); err != nil {
		return err
	}
	if err := h.cfg.Store.Unsubscribe(ctx, sid, stamped); err != nil {
		return err
	}
	now := h.cfg.Clock.Now() // after the cancel's stamp
	h.mu.Lock()
	if r := h.routes[s.Ts]; r != nil && r.tmax > now {
		r.tmax, r.cancelled = now, true
		h.endsAt(r)
	}
	h.mu.Unlock()
	return nil
}

// Resume replays sid's notifications with sequence numbers above after
// and routes it to sink. owner must have made it. answer
// runs with the replay before any later notification reaches sink.
func (h *Hub) Resume(ctx context.Context, sid string, after int64, owner string, sink Sink, answer func(*subscriptions.ReplayResult)) error {
	return h.ResumeTagged(ctx, sid, after, owner, sink, 0, answer)
}

// ResumeTagged is Resume with the route's notifications and end carrying
// tag, for a sink that serves many routes.
func (h *Hub) ResumeTagged(ctx context.Context, sid string, after int64, owner string, sink Sink, tag uint64, answer func(*subscriptions.ReplayResult)) error {
	if after < 0 {
		return ErrBadSeq
	}
	ts, _, err := subscriptions.ParseID(sid)
	if err != nil {
		return err
	}
	l := h.seq.beginJoin()
	defer h.seq.finishJoin(l)
	res, err := h.cfg.Store.Replay(ctx, sid, ts+min(after, math.MaxInt64-ts))
	if err != nil {
		return err
	}
	if err := owned(res.Sub, owner); err != nil {
		return err
	}
	r := &route{sink: sink, tag: tag, sid: sid, uid: res.Sub.Uid, ts: ts, from: res.Now, tmax: res.Sub.Tmax, last: after}
	h.attach(r, nil)
	answer(res)
	h.replay(r, res)
	h.open(r)
	return nil
}

// attach routes r's subscription to r.sink, taking it from any other sink,
// and holds the publications stamped after r.from that were dispatched
// before the route existed, for open to pass on. With expect set, it
// attaches only if expect is still the subscription's route, and reports
// whether it did.
func (h *Hub) attach(r *route, expect *route) bool {
	r.holding = true
	h.mu.Lock()
	if expect != nil && h.routes[r.ts] != expect {
		h.mu.Unlock()
		return false
	}
	for _, d := range h.recent {
		if d.res.Pub.Tp <= r.from {
			continue
		}
		for i := range d.res.Matches {
			if s := &d.res.Matches[i]; s.Ts == r.ts {
				r.hold(&Notification{Sid: r.sid, Uid: s.Uid, Seq: Seq(s.Ts, &d.res.Pub), Pub: &d.res.Pub, Body: d.body, Tag: r.tag})
				break
			}
		}
	}
	old := h.routes[r.ts]
	var oldLast int64
	var oldTag uint64
	if old != nil {
		oldLast, oldTag = old.last, old.tag
	}
	h.routes[r.ts] = r
	delete(h.lagging, r.ts) // the new route catches up by its own replay
	if old == nil {
		h.endsAt(r)
	}
	h.mu.Unlock()
	if old != nil && old.sink != r.sink {
		old.sink.Ended(End{Sid: r.sid, Uid: r.uid, Why: EndMoved, Last: oldLast, Tag: oldTag})
	}
	return true
}

// open passes on what r held, once its operation has answered, and lets
// later notifications through.
func (h *Hub) open(r *route) {
	var sent, refused uint64
	h.mu.Lock()
	r.holding = false
	if h.routes[r.ts] == r { // else resumed elsewhere, whose replay covers these
		for _, n := range r.heldList() {
			if r.lagging {
				h.skipped.Add(1)
				continue
			}
			n.Prev = r.last
			if r.sink.Notify(n) {
				sent++
				r.last = n.Seq
			} else {
				refused++
				h.lag(r)
			}
		}
		if !r.lagging {
			r.lagSince = 0 // caught up
		}
	}
	r.held = nil
	h.mu.Unlock()
	h.dispatched.Add(sent)
	h.refused.Add(refused)
}

// horizon is the stamp below which no publication is left to dispatch:
// the least of now, the lower bound of every running PUBLISH and the stamp
// of every publication queued or being dispatched.
func (h *Hub) horizon(now int64) int64 {
	h.seq.mu.Lock()
	hz := min(now, h.seq.pubs.oldest)
	if h.seq.ready.Len() > 0 {
		hz = min(hz, h.seq.ready[0].Pub.Tp)
	}
	h.seq.mu.Unlock()
	// A result leaving the heap after the read above is queued here (or
	// already dispatched) by the time this lock is taken.
	h.dmu.Lock()
	if len(h.released) > 0 {
		hz = min(hz, h.released[0].Pub.Tp)
	}
	if h.busy {
		hz = min(hz, h.from)
	}
	h.dmu.Unlock()
	return hz
}

// Expire drops the routes of subscriptions that ended before now and
// before every publication still to be dispatched, telling their sinks.
// Call it every second or so: a route costs memory and counts against its
// connection's limit until then.
func (h *Hub) Expire(now int64) {
	type ended struct {
		sink Sink
		End
	}
	var gone []ended
	now = h.horizon(now)
	h.mu.Lock()
	// Subscriptions ending in second s are over once now passes s+1.
	last := now/int64(time.Second) - 1
	if h.swept == 0 {
		h.swept = last
		for sec := range h.ending {
			h.swept = min(h.swept, sec-1)
		}
	}
	var later []int64
	for ; h.swept < last; h.swept++ {
		sec := h.swept + 1
		for _, ts := range h.ending[sec] {
			if r := h.routes[ts]; r != nil && r.tmax < now {
				if r.holding {
					// A resume or catch-up is replaying into it: its end
					// comes once that is out, so the ended word follows
					// the last notification.
					later = append(later, ts)
					continue
				}
				delete(h.routes, ts)
				delete(h.lagging, ts)
				why := EndWindow
				switch {
				case r.lagging:
					why = EndBehind
				case r.cancelled:
					why = EndCancelled
				}
				gone = append(gone, ended{r.sink, End{Sid: r.sid, Uid: r.uid, Why: why, Last: r.last, Tag: r.tag}})
			}
		}
		delete(h.ending, sec)
	}
	if len(later) > 0 {
		h.ending[last+1] = append(h.ending[last+1], later...)
	}
	h.mu.Unlock()
	for _, e := range gone {
		e.sink.Ended(e.End)
	}
}

// endsAt files r for Expire under the second it ends. h.mu is held.
func (h *Hub) endsAt(r *route) {
	sec := max(r.tmax/int64(time.Second), h.swept+1)
	h.ending[sec] = append(h.ending[sec], r.ts)
}

// Detach drops sid's route if sink holds it: the sink is going away. The
// subscription stays stored and can be resumed.
func (h *Hub) Detach(sid string, sink Sink) {
	ts, _, err := subscriptions.ParseID(sid)
	if err != nil {
		return
	}
	h.mu.Lock()
	if r := h.routes[ts]; r != nil && r.sink == sink {
		delete(h.routes, ts)
		delete(h.lagging, ts)
	}
	h.mu.Unlock()
}
