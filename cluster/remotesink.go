package cluster

import (
	"sync"

	"github.com/seed84792017/cellcast/delivery"
)

// remoteSink is, on a shard's owner, the sink of every subscription whose
// subscriber one node holds. The hub tags each route with the holder's
// number for it (delivery.Hub.SubscribeTagged), so a notification names
// its route without a sink of its own per subscription: one of those cost
// a cache miss per notification on the owner.
//
// Until a route's operation has been answered (after the log append),
// the sink holds the route's notifications and its end, so the holder
// sees the answer first: an end that overtook the answer would find no
// route at the holder, and the subscriber would never hear that its
// window is over.
type remoteSink struct {
	o      *owner
	holder string
	out    sender // to holder

	mu   sync.Mutex
	held map[uint64]*heldRoute // by route: those not answered yet
}

// heldRoute is what a route not answered yet keeps back.
type heldRoute struct {
	pending []delivery.Notification
	end     *lostRoute // the route ended while held
}

func newRemoteSink(o *owner, holder string) *remoteSink {
	return &remoteSink{o: o, holder: holder, out: o.n.outbox(holder)}
}

// Notify sends n to the holder, or keeps it while its route is held. It
// never refuses: NATS buffers, and a holder that falls behind resumes
// (holder.go).
func (k *remoteSink) Notify(n *delivery.Notification) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.held) > 0 {
		if h := k.held[n.Tag]; h != nil {
			h.pending = append(h.pending, *n)
			return true
		}
	}
	k.out.notify(n.Tag, n)
	return true
}

// hold keeps route's notifications and end until release.
func (k *remoteSink) hold(route uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.held == nil {
		k.held = map[uint64]*heldRoute{}
	}
	if k.held[route] == nil {
		k.held[route] = &heldRoute{}
	}
}

// release sends what route held and lets its later notifications
// through.
func (k *remoteSink) release(route uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	h := k.held[route]
	if h == nil {
		return
	}
	delete(k.held, route)
	for i := range h.pending {
		k.out.notify(route, &h.pending[i])
	}
	if h.end != nil {
		k.out.ended(h.end)
	}
}

// drop forgets what route held: its operation failed, and its holder
// will not make the route.
func (k *remoteSink) drop(route uint64) {
	k.mu.Lock()
	delete(k.held, route)
	k.mu.Unlock()
}

// Ended tells the holder that the subscription no longer routes to it,
// unless the shard is moving (then the holder resumes it elsewhere).
func (k *remoteSink) Ended(e delivery.End) {
	o := k.o
	o.mu.Lock()
	closing := o.closing
	o.mu.Unlock()
	if closing {
		return
	}
	l := &lostRoute{Sid: e.Sid, Uid: e.Uid, Why: e.Why, Last: e.Last, Node: o.lease}
	k.mu.Lock()
	defer k.mu.Unlock()
	if h := k.held[e.Tag]; h != nil {
		h.end = l
		return
	}
	k.out.ended(l)
}
