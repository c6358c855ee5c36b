package client

import (
	"sync"
	"sync/atomic"
	"time"
)

// Subscription is a live subscription. Its notifications arrive on C (or
// through the request's Handler) in order, each once; C is closed when
// the subscription ends, and Err then says why.
type Subscription struct {
	Sid       string
	Cell      string    // the cell it was stored at (its cover's first)
	Cover     []string  // every cell, for a cover of more than one
	Ts        time.Time // its stamp
	ExpiresAt time.Time // the end of its future window
	Live      bool      // false: no future window, nothing follows Past
	Past      []Publication
	// C carries the notifications when the request had no Handler. Read
	// it until it is closed: a reader that stops holds up the connection
	// once PendingLimit notifications wait.
	C <-chan Notification

	c       *Client
	uid     string // the request's, for resume and unsubscribe in open mode
	handler func(Notification)
	inline  bool
	limit   int
	last    atomic.Int64 // highest seq received; written by the reader only
	held    bool         // routed to the current connection; under Client.mu
	// repairing: a resume is on its way, after a drop or a gap.
	repairing atomic.Bool
	repairAt  atomic.Int64 // when the resume went, unix ns
	// tailChecked: resumed once at the window's end (NATS); under Client.mu.
	tailChecked bool

	mu      sync.Mutex
	cond    sync.Cond // over mu: the queue changed or the subscription ended
	queue   []Notification
	ended   bool
	discard bool // at the end, drop what is queued
	err     error
	ch      chan Notification
	done    chan struct{}
}

func newSubscription(c *Client, r *SubscribeRequest, uid string) *Subscription {
	s := &Subscription{c: c, uid: uid, handler: r.Handler, inline: r.Inline && r.Handler != nil, limit: c.opts.PendingLimit, done: make(chan struct{})}
	s.cond.L = &s.mu
	if s.handler == nil {
		s.ch = make(chan Notification, 16)
		s.C = s.ch
	}
	return s
}

// LastSeq is the sequence number of the last notification received.
func (s *Subscription) LastSeq() int64 { return s.last.Load() }

// Done is closed when the subscription ends.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Err says why the subscription ended: ErrWindowOver, ErrCancelled,
// ErrMoved, ErrLost or ErrClosed; nil while it lasts.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// deliver queues n for the pump, waiting while PendingLimit are queued.
// It runs on the reader.
func (s *Subscription) deliver(n Notification) {
	if s.inline {
		s.handler(n)
		return
	}
	s.mu.Lock()
	for len(s.queue) >= s.limit && !s.ended {
		s.cond.Wait()
	}
	if !s.ended {
		s.queue = append(s.queue, n)
		s.cond.Broadcast()
	}
	s.mu.Unlock()
}

// start runs the pump that hands queued notifications to C or Handler.
func (s *Subscription) start() {
	if !s.inline {
		go s.pump()
	}
}

func (s *Subscription) pump() {
	var batch []Notification
	for {
		s.mu.Lock()
		for len(s.queue) == 0 && !s.ended {
			s.cond.Wait()
		}
		if s.discard {
			s.queue = nil
		}
		batch, s.queue = s.queue, batch[:0]
		over := s.ended && len(batch) == 0
		s.cond.Broadcast() // room for the reader
		s.mu.Unlock()
		if over {
			if s.ch != nil {
				close(s.ch)
			}
			return
		}
		for _, n := range batch {
			if s.handler != nil {
				s.handler(n)
				continue
			}
			select {
			case s.ch <- n:
			case <-s.c.done:
				// The client closed: nobody may read any more.
				s.mu.Lock()
				s.discard = true
				s.mu.Unlock()
			}
		}
		clear(batch)
	}
}

// finish ends the subscription once; discard drops what is queued
// (cancelled or closed: nobody waits for it).
func (s *Subscription) finish(why error, discard bool) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended, s.err, s.discard = true, why, discard
	s.cond.Broadcast()
	s.mu.Unlock()
	close(s.done)
}
