package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Client is a connection to a broker that reconnects by itself. Its
// methods may be called from many goroutines.
type Client struct {
	url  string
	opts Options
	// redial makes a new transport after a drop; nil when the transport
	// reconnects by itself (NATS) and calls reattach.
	redial func(context.Context) (transport, error)

	mu      sync.Mutex
	cur     transport     // nil while disconnected
	lostAt  time.Time     // when cur last dropped
	ready   chan struct{} // closed while cur is set
	closed  bool
	nextID  uint64
	pending map[string]*call
	subs    map[string]*Subscription

	done    chan struct{} // closed by Close
	readers sync.WaitGroup
	stats   stats
}

// call is a request waiting for its reply; fn runs on the reader with the
// whole reply (every page joined), or with the reason there is none.
type call struct {
	fn  func(*wireReply, error)
	rep *wireReply // with the pages so far
	bad error      // a page whose list could not be read
}

type stats struct {
	reconnects, resumes, duplicates, orphans, lost, gaps atomic.Int64
}

// Stats counts what the client did behind its API.
type Stats struct {
	Reconnects int64 // connections made again after a drop
	Resumes    int64 // subscriptions resumed after a drop or a gap
	Duplicates int64 // notifications dropped as already received
	Orphans    int64 // notifications of subscriptions the client no longer holds
	Lost       int64 // subscriptions ended with ErrLost
	Gaps       int64 // notifications that showed one missing before them (NATS)
}

// Stats returns the counters so far.
func (c *Client) Stats() Stats {
	return Stats{c.stats.reconnects.Load(), c.stats.resumes.Load(), c.stats.duplicates.Load(),
		c.stats.orphans.Load(), c.stats.lost.Load(), c.stats.gaps.Load()}
}

func newClient(url string, opts Options) *Client {
	return &Client{url: url, opts: opts, ready: make(chan struct{}), pending: map[string]*call{},
		subs: map[string]*Subscription{}, done: make(chan struct{})}
}

// start makes tr the transport and starts the sweeper.
func (c *Client) start(tr transport) {
	c.mu.Lock()
	c.cur = tr
	close(c.ready)
	c.mu.Unlock()
	c.readers.Add(1)
	go c.sweep()
}

// Connected reports whether a connection is up (resumes may still be on
// their way).
func (c *Client) Connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur != nil
}

// ForceReconnect drops the connection abruptly, as a network failure
// would; the client reconnects and resumes as after any drop. Requests in
// flight fail with ErrConnectionLost.
func (c *Client) ForceReconnect() {
	c.mu.Lock()
	tr := c.cur
	c.mu.Unlock()
	if tr != nil {
		tr.abort()
	}
}

// Close ends the connection and every subscription (with ErrClosed).
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.done)
	tr := c.cur
	subs := c.subs
	c.subs = map[string]*Subscription{}
	c.mu.Unlock()
	var err error
	if tr != nil {
		err = tr.close()
	}
	c.readers.Wait()
	for _, s := range subs {
		s.finish(ErrClosed, true)
	}
	return err
}

// connected waits for a connection.
func (c *Client) connected(ctx context.Context) (transport, error) {
	for {
		c.mu.Lock()
		tr, ready, closed := c.cur, c.ready, c.closed
		c.mu.Unlock()
		switch {
		case closed:
			return nil, ErrClosed
		case tr != nil:
			return tr, nil
		}
		select {
		case <-ready:
		case <-c.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// send writes req on tr (nil: the current transport, waited for) with a
// fresh id; fn gets the reply. An error means fn will not run.
func (c *Client) send(ctx context.Context, tr transport, req *wireRequest, fn func(*wireReply, error)) error {
	if tr == nil {
		var err error
		if tr, err = c.connected(ctx); err != nil {
			return err
		}
	}
	if req.UID == "" {
		req.UID = c.opts.UID
	}
	if n, ok := tr.(*natsConn); ok && (req.Op == "subscribe" || req.Op == "resume") {
		// Listen before asking, or the first notifications pass by.
		if err := n.listen(req.UID); err != nil {
			return err
		}
	}
	c.mu.Lock()
	if c.cur != tr {
		c.mu.Unlock()
		return ErrConnectionLost
	}
	c.nextID++
	req.ID = strconv.FormatUint(c.nextID, 10)
	c.pending[req.ID] = &call{fn: fn}
	c.mu.Unlock()
	b, err := json.Marshal(req)
	if err != nil {
		c.forget(req.ID)
		return fmt.Errorf("cellcast: encoding the request: %w", err)
	}
	if err := tr.send(req.Op, b); err != nil {
		// WebSocket: the reader fails the call once it sees the closed
		// connection. NATS refused it outright: nothing will answer.
		if _, ok := tr.(*natsConn); ok {
			c.forget(req.ID)
			return fmt.Errorf("%w: %v", ErrConnectionLost, err)
		}
	}
	return nil
}

// forget drops a call whose reply nobody will wait for.
func (c *Client) forget(id string) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// request sends req and waits for its reply, which onReply turns into a
// value on the reader, so that a subscription is in place before the
// frames after its reply are read. If the caller stops waiting first,
// abandon gets that value (nil abandon: the reply is not waited for).
func request[T any](ctx context.Context, c *Client, req *wireRequest, onReply func(*wireReply) (T, error), abandon func(T)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	var mu sync.Mutex
	gone := false
	err := c.send(ctx, nil, req, func(rep *wireReply, err error) {
		var v T
		if err == nil {
			if err = rep.err(); err == nil {
				v, err = onReply(rep)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if gone {
			if err == nil && abandon != nil {
				abandon(v)
			}
			return
		}
		ch <- result{v, err}
	})
	if err != nil {
		var zero T
		return zero, err
	}
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		mu.Lock()
		gone = true
		mu.Unlock()
		select {
		case r := <-ch: // it came meanwhile
			return r.v, r.err
		default:
			if abandon == nil {
				c.forget(req.ID)
			}
			var zero T
			return zero, ctx.Err()
		}
	}
}

// frame handles one frame from tr; one runs at a time.
func (c *Client) frame(tr transport, data []byte) {
	if isNotification(data) {
		c.notify(tr, data)
		return
	}
	rep, err := decodeReply(data)
	if rep == nil {
		c.opts.Log.Error("cellcast client: unreadable frame", "err", err, "frame", fmt.Sprintf("%.200q", data))
		return
	}
	if rep.Op == "ended" {
		c.ended(tr, rep.Sid, rep.Reason, rep.Last)
		return
	}
	c.reply(tr, rep, err)
}

// ended handles the broker's word that a subscription stopped routing
// here. It comes after the subscription's last notification, whose seq
// it names: a client that has not received that one lost the last ones
// on the way (NATS), and resumes to get them.
func (c *Client) ended(tr transport, sid, reason string, last int64) {
	c.mu.Lock()
	s := c.subs[sid]
	c.mu.Unlock()
	if s == nil {
		return // ended here already (unsubscribed, say)
	}
	if reason != "moved" && last > s.last.Load() {
		c.stats.gaps.Add(1)
		c.repair(tr, s)
		return
	}
	switch reason {
	case "window_over":
		c.end(s, ErrWindowOver)
	case "cancelled":
		c.end(s, ErrCancelled)
	case "moved":
		c.end(s, ErrMoved)
	default: // "behind", or news to this client: resume while it can
		c.repair(tr, s)
	}
}

// reply files a reply or a page of one, and completes its call once the
// last page is in; bad says its list could not be read.
func (c *Client) reply(tr transport, rep *wireReply, bad error) {
	c.mu.Lock()
	cl := c.pending[rep.ID]
	if cl == nil {
		c.mu.Unlock()
		c.opts.Log.Warn("cellcast client: a reply nobody waits for", "id", rep.ID, "op", rep.Op, "code", rep.Code, "message", rep.Message)
		return
	}
	if rep.Op == "page" {
		if cl.rep == nil {
			delete(c.pending, rep.ID)
			c.mu.Unlock()
			cl.fn(nil, fmt.Errorf("%w: a page before its reply", ErrProtocol))
			return
		}
		cl.rep.pubs = append(cl.rep.pubs, rep.pubs...)
		cl.rep.More, cl.rep.Next = rep.More, rep.Next
	} else {
		cl.rep = rep
	}
	if bad != nil {
		cl.bad = bad
	}
	if cl.rep.More {
		next := cl.rep.Next
		c.mu.Unlock()
		if next != "" { // cursor mode: pull the next page, under the same id
			b, _ := json.Marshal(&wireRequest{ID: rep.ID, Op: "page", Cursor: next})
			go tr.send("page", b)
		}
		return
	}
	delete(c.pending, rep.ID)
	c.mu.Unlock()
	if cl.bad != nil {
		cl.fn(nil, cl.bad)
		return
	}
	cl.fn(cl.rep, nil)
}

// notify routes a notification to its subscription. One the subscription
// already received is dropped; one whose prev shows a notification
// missing before it is dropped too, and the subscription resumed from the
// last one received, which replays the missing one and this one.
func (c *Client) notify(tr transport, data []byte) {
	sid, seq, prev, pub, err := splitNotification(data)
	if err != nil {
		c.opts.Log.Error("cellcast client: unreadable notification", "err", err)
		return
	}
	c.mu.Lock()
	s := c.subs[string(sid)]
	c.mu.Unlock()
	if s == nil {
		c.stats.orphans.Add(1)
		return
	}
	// Only the reader writes last, and one reader runs at a time.
	last := s.last.Load()
	if seq <= last {
		c.stats.duplicates.Add(1)
		return
	}
	if prev > last {
		c.stats.gaps.Add(1)
		c.repair(tr, s)
		return
	}
	n := Notification{Sid: s.Sid, Seq: seq}
	if err := decodePublication(pub, &n.Publication); err != nil {
		c.opts.Log.Error("cellcast client: unreadable publication", "sid", s.Sid, "seq", seq, "err", err)
		return
	}
	s.last.Store(seq)
	s.deliver(n)
}

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
	err := c.send(context.Background(), tr, &wireRequest{Op: "resume", UID: s.uid, Sid: s.Sid, After: &after}, func(rep *wireReply, err error) {
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
