package cluster

import (
	"sync"

	"github.com/seed84792017/cellcast/delivery"
)

// remoteSink is, on a shard's owner, the route of one subscription to
// the node holding its subscriber. Until its operation's answer has gone
// out (after the log append) it holds notifications, so the holder sees
// the answer first.
type remoteSink struct {
	o           *owner
	holder, sid string

	mu      sync.Mutex
	held    bool
	pending []delivery.Notification
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
	k.o.n.outbox(k.holder).notify(n)
	return true
}

func (k *remoteSink) hold() {
	k.mu.Lock()
	k.held = true
	k.mu.Unlock()
}

// release sends what was held and lets later notifications through.
func (k *remoteSink) release() {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := k.o.n.outbox(k.holder)
	for i := range k.pending {
		out.notify(&k.pending[i])
	}
	k.pending, k.held = nil, false
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
	o.n.outbox(k.holder).ended(&lostRoute{Sid: e.Sid, Uid: e.Uid, Why: e.Why, Last: e.Last, Node: o.lease})
}
