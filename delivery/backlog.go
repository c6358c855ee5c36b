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
	RetryAfter time.Duration
}

func (e *OverloadedError) Error() string {
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
type backlog struct{ n, bytes atomic.Int64 }

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

func (b *backlog) add(res *subscriptions.PublishResult) {
	n, bytes := cost(res)
	b.n.Add(n)
	b.bytes.Add(bytes)
}

func (b *backlog) remove(res *subscriptions.PublishResult) {
	n, bytes := cost(res)
	b.n.Add(-n)
	b.bytes.Add(-bytes)
}

// admit refuses a publication while the backlog is over either bound.
// Publications already past this check may overshoot the bound by what
// they match; the bound is what the hub holds before it says no.
func (h *Hub) admit() error {
	n, bytes := h.backlog.n.Load(), h.backlog.bytes.Load()
	if n < int64(h.cfg.MaxBacklog) && bytes < h.cfg.MaxBacklogBytes {
		return nil
	}
	h.overloaded.Add(1)
	return &OverloadedError{Backlog: n, Bytes: bytes, RetryAfter: retryAfter}
}
