package delivery

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/seed84792017/cellcast/subscriptions"
)

// ErrOverloaded is matched (errors.Is) by every *OverloadedError.
var ErrOverloaded = errors.New("overloaded")

// OverloadedError refuses a publication while the notifications already
// owed exceed the hub's bound. Nothing was stored; the client may retry
// after RetryAfter.
type OverloadedError struct {
	Backlog    int64 // notifications owed
	Bytes      int64 // their estimated size
	Behind     bool  // subscribers are behind together (lag.go)
	RetryAfter time.Duration
}

func (e *OverloadedError) Error() string {
	if e.Behind {
		return fmt.Sprintf("overloaded: subscribers are catching up with what they missed; retry in %v", e.RetryAfter)
	}
	return fmt.Sprintf("overloaded: %d notifications (%d MiB) wait to be delivered; retry in %v", e.Backlog, e.Bytes>>20, e.RetryAfter)
}

func (e *OverloadedError) Is(target error) bool { return target == ErrOverloaded }

// retryAfter is the hint an overloaded publisher gets: about how long the
// dispatcher takes to work a bound's worth of backlog down at a few
// hundred thousand notifications a second.
const retryAfter = 100 * time.Millisecond

// backlog counts what stored publications still owe their subscribers,
// from the store's answer to the dispatcher's hand-off: notifications and
// an estimate of their bytes (the publication once, a notification each).
// It also counts the publications admitted and not yet stored, whose
// fan-out is not known yet: admit reckons each at the recent mean (before
// the first publication, at every route), so a burst of concurrent
// publishes (a client may have dozens in flight) cannot all slip under
// the bound at once.
type backlog struct {
	n, bytes atomic.Int64
	admitted atomic.Int64 // publications past admit, not yet stored
	fanout   atomic.Int64 // mean matches of recent publications, a moving average ×16
	known    atomic.Bool  // a publication has been stored: fanout means something
}

// notificationCost is the memory of one queued notification beyond the
// publication's body: the Notification, the frame, the queue slot.
const notificationCost = 96

func cost(res *subscriptions.PublishResult) (n, bytes int64) {
	p := &res.Pub
	size := int64(256 + len(p.Desc))
	for k, v := range p.Attrs {
		size += int64(len(k) + len(v))
	}
	n = int64(len(res.Matches))
	return n, size + n*notificationCost
}

// stored turns an admitted publication into what it owes (res nil: it
// failed and owes nothing).
func (b *backlog) stored(res *subscriptions.PublishResult) {
	b.admitted.Add(-1)
	if res == nil {
		return
	}
	n, bytes := cost(res)
	b.n.Add(n)
	b.bytes.Add(bytes)
	if b.known.CompareAndSwap(false, true) {
		b.fanout.Store(16 * n)
		return
	}
	// A racing update may be lost; the mean is only an estimate.
	f := b.fanout.Load()
	b.fanout.Store(f + n - f/16)
}

func (b *backlog) remove(res *subscriptions.PublishResult) {
	n, bytes := cost(res)
	b.n.Add(-n)
	b.bytes.Add(-bytes)
}

// admit refuses a publication while the backlog, with what the
// publications admitted before it are likely to add, is over either
// bound. Publications admitted at the same instant may still overshoot
// the bound by what they match.
func (h *Hub) admit() error {
	if h.behindTogether() {
		h.overloaded.Add(1)
		return &OverloadedError{Behind: true, RetryAfter: retryAfter}
	}
	b := &h.backlog
	n, bytes := b.n.Load(), b.bytes.Load()
	fanout := b.fanout.Load() / 16
	if !b.known.Load() {
		h.mu.Lock()
		fanout = int64(len(h.routes))
		h.mu.Unlock()
	}
	ahead := b.admitted.Load() * fanout
	if n+ahead < int64(h.cfg.MaxBacklog) && bytes+ahead*notificationCost < h.cfg.MaxBacklogBytes {
		b.admitted.Add(1)
		return nil
	}
	h.overloaded.Add(1)
	return &OverloadedError{Backlog: n, Bytes: bytes, RetryAfter: retryAfter}
}
