package client

// Losing a connection and getting it back: failing the calls in flight,
// dialling again with backoff, resuming every live subscription from the
// last notification it received, and repairing gaps.

import (
	"context"
	"errors"
	"time"

	"github.com/seed84792017/cellcast/protocol"
)

// lost fails the calls of a dropped transport and, for a WebSocket,
// dials again.
func (c *Client) lost(tr transport, err error) {
	c.mu.Lock()
	if c.cur != tr {
		c.mu.Unlock()
		return
	}
	c.cur = nil
	c.lostAt = time.Now()
	c.ready = make(chan struct{})
	pending := c.pending
	c.pending = map[string]*call{}
	for _, s := range c.subs {
		s.held = false
	}
	closed := c.closed
	c.mu.Unlock()
	why := ErrConnectionLost
	if closed {
		why = ErrClosed
	}
	for _, cl := range pending {
		cl.fn(nil, why)
	}
	if closed {
		return
	}
	if c.opts.OnDisconnect != nil {
		c.opts.OnDisconnect(err)
	}
	c.opts.Log.Info("cellcast client: connection lost; reconnecting", "url", c.url, "err", err)
	if c.redial != nil {
		c.readers.Add(1)
		go c.reconnect()
	}
}

// reconnect dials until it succeeds or the client closes, then resumes
// every subscription.
func (c *Client) reconnect() {
	defer c.readers.Done()
	wait := time.Duration(0)
	for {
		wait = backoff(wait, c.opts.MinBackoff, c.opts.MaxBackoff)
		select {
		case <-c.done:
			return
		case <-time.After(wait):
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		tr, err := c.redial(ctx)
		cancel()
		if err != nil {
			c.opts.Log.Debug("cellcast client: redial failed", "err", err, "retry_in", wait)
			continue
		}
		if !c.reattach(tr) {
			tr.close()
		}
		return
	}
}

// reattach makes tr the transport again after a drop and resumes every
// subscription from the last sequence number it received. It reports
// false when the client has closed meanwhile.
func (c *Client) reattach(tr transport) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	c.cur = tr
	close(c.ready)
	subs := make([]*Subscription, 0, len(c.subs))
	for _, s := range c.subs {
		subs = append(subs, s)
	}
	lostAt := c.lostAt
	c.mu.Unlock()
	c.stats.reconnects.Add(1)
	now := time.Now()
	for _, s := range subs {
		if now.After(s.ExpiresAt.Add(resumeGrace)) {
			// Past the broker's resume grace: asking is in vain. Whole
			// if the connection outlived that grace too.
			if lostAt.After(s.ExpiresAt.Add(resumeGrace)) {
				c.end(s, ErrWindowOver)
			} else {
				c.end(s, ErrLost)
			}
			continue
		}
		s.repairing.Store(true)
		s.repairAt.Store(now.UnixNano())
		c.resume(tr, s)
	}
	return true
}

// resumeGrace is how long after its window the broker still resumes a
// subscription (docs/protocol.md, "resume").
const resumeGrace = time.Second

// repair resumes s from the last notification received, unless a resume
// is on its way already.
func (c *Client) repair(tr transport, s *Subscription) {
	if s.repairing.CompareAndSwap(false, true) {
		s.repairAt.Store(time.Now().UnixNano())
		c.resume(tr, s)
	}
}

// repairAll repairs every subscription.
func (c *Client) repairAll(tr transport) {
	c.mu.Lock()
	subs := make([]*Subscription, 0, len(c.subs))
	for _, s := range c.subs {
		subs = append(subs, s)
	}
	c.mu.Unlock()
	for _, s := range subs {
		c.repair(tr, s)
	}
}

// repairTimeout: a resume unanswered this long counts as lost (NATS may
// drop its reply), and is asked again.
const repairTimeout = time.Second

// resume asks the broker to replay s from the last sequence number
// received and route it to tr. A transient refusal is retried; a
// subscription the broker no longer knows is lost. s.repairing is set,
// and clears once the broker has answered.
func (c *Client) resume(tr transport, s *Subscription) {
	after := s.last.Load()
	err := c.send(context.Background(), tr, &wireRequest{Op: protocol.OpResume, UID: s.uid, Sid: s.Sid, After: &after}, func(rep *wireReply, err error) {
		if err != nil {
			s.repairing.Store(false) // the connection dropped: the next one resumes
			return
		}
		err = rep.err()
		switch {
		case err == nil:
			c.stats.resumes.Add(1)
			c.mu.Lock()
			s.held = true
			c.mu.Unlock()
			s.repairing.Store(false)
			if c.opts.OnResume != nil {
				c.opts.OnResume(s.Sid, after)
			}
		case errors.Is(err, ErrNotFound):
			c.end(s, ErrLost)
		default: // overloaded, unavailable, internal: try again
			wait := c.opts.MinBackoff
			var e *Error
			if errors.As(err, &e) && e.RetryAfter > 0 {
				wait = e.RetryAfter
			}
			c.opts.Log.Warn("cellcast client: resume refused; retrying", "sid", s.Sid, "err", err, "retry_in", wait)
			time.AfterFunc(wait, func() { c.resume(tr, s) })
		}
	})
	if err != nil {
		s.repairing.Store(false)
		if !errors.Is(err, ErrConnectionLost) {
			c.opts.Log.Warn("cellcast client: resume", "sid", s.Sid, "err", err)
		}
	}
}

// end drops s from the client and closes it.
func (c *Client) end(s *Subscription, why error) {
	c.mu.Lock()
	if c.subs[s.Sid] == s {
		delete(c.subs, s.Sid)
		c.subsGen.Add(1)
		if why == ErrLost {
			c.stats.lost.Add(1)
		}
	}
	c.mu.Unlock()
	s.finish(why, why == ErrCancelled)
}

// sweep ends subscriptions whose window is over, when the broker has not
// said so (an "ended" frame lost with a dropped connection or NATS
// message, or a broker that does not send them): EndGrace past the window
// no late notification is expected.
//
// Over NATS it also repairs what a gap in prev cannot show: after NATS
// reports dropped messages, every subscription is resumed (the last ones
// dropped have nothing after them to show the gap); a subscription is
// resumed once more as its window ends, while the broker still knows it;
// and a resume whose reply was dropped is forgotten.
func (c *Client) sweep() {
	defer c.readers.Done()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case now := <-t.C:
			type ended struct {
				s   *Subscription
				why error
			}
			var es []ended
			var check []*Subscription
			c.mu.Lock()
			tr := c.cur
			n, lossy := tr.(*natsConn)
			dropped := lossy && n.dropped.Swap(false)
			for _, s := range c.subs {
				switch {
				case now.After(s.ExpiresAt.Add(c.opts.EndGrace)):
					why := ErrWindowOver
					if !s.held {
						why = ErrLost
					}
					es = append(es, ended{s, why})
				case !lossy:
				case dropped:
					check = append(check, s)
				case !s.tailChecked && now.After(s.ExpiresAt):
					s.tailChecked = true
					check = append(check, s)
				}
				if lossy && s.repairing.Load() && now.UnixNano()-s.repairAt.Load() > int64(repairTimeout) {
					// Its reply, or what it replayed, may have been
					// dropped: ask again.
					s.repairing.Store(false)
					check = append(check, s)
				}
			}
			c.mu.Unlock()
			for _, e := range es {
				c.end(e.s, e.why)
			}
			for _, s := range check {
				c.repair(tr, s)
			}
		}
	}
}
