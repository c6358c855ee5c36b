package cluster

import (
	"sync"

	"github.com/seed84792017/cellcast/delivery"
)

// remoteSink is, on a shard's owner, the route of one subscription to
// the node holding its subscriber. Until its operation's answer has gone
// out (after the log append) it holds notifications and its end, so the
// holder sees the answer first: an end that overtook the answer would
// find no route at the holder, and the subscriber would never hear that
// its window is over.
type remoteSink struct {
	o           *owner
	holder, sid string
	out         sender // to holder

	mu      sync.Mutex
	route   uint64 // the holder's number for the route
	held    bool
	pending []delivery.Notification
	end     *lostRoute // the route ended while held
}

func newRemoteSink(o *owner, holder, sid string, route uint64) *remoteSink {
	return &remoteSink{o: o, holder: holder, sid: sid, out: o.n.outbox(holder), route: route}
}

// Notify sends n to the holder, or keeps it while held. It never refuses:
// NATS buffers, and a holder that falls behind resumes (holder.go).
func (k *remoteSink) Notify(n *delivery.Notification) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.held {
		k.pending = append(k.pending, *n)
		return true
	}
	k.out.notify(k.route, n)
	return true
}

// hold keeps notifications until release; those released go on route.
func (k *remoteSink) hold(route uint64) {
	k.mu.Lock()
	k.held, k.route = true, route
	k.mu.Unlock()
}

// release sends what was held and lets later notifications through.
func (k *remoteSink) release() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i := range k.pending {
		k.out.notify(k.route, &k.pending[i])
	}
	if k.end != nil {
		k.out.ended(k.end)
	}
	k.pending, k.held, k.end = nil, false, nil
}

// Lost is followed by Ended, which says why.
func (k *remoteSink) Lost(string) {}

// Ended tells the holder that the subscription no longer routes to it,
// unless the shard is moving (then the holder resumes it elsewhere).
func (k *remoteSink) Ended(e delivery.End) {
	o := k.o
	o.mu.Lock()
	if o.sinks[k.holder+" "+k.sid] == k {
		delete(o.sinks, k.holder+" "+k.sid)
	}
	closing := o.closing
	o.mu.Unlock()
	if closing {
		return
	}
	l := &lostRoute{Sid: e.Sid, Uid: e.Uid, Why: e.Why, Last: e.Last, Node: o.lease}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.held {
		k.end = l
		return
	}
	k.out.ended(l)
}
