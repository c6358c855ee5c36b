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

	"github.com/gorilla/websocket"
)

// Client is a connection to a broker that reconnects by itself. Its
// methods may be called from many goroutines.
type Client struct {
	url  string
	opts Options

	mu      sync.Mutex
	cur     *conn         // nil while reconnecting
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
	fn   func(*wireReply, error)
	rep  *wireReply
	list *[]json.RawMessage // where the pages' results go
}

type stats struct {
	reconnects, resumes, duplicates, orphans, lost atomic.Int64
}

// Stats counts what the client did behind its API.
type Stats struct {
	Reconnects int64 // connections made again after a drop
	Resumes    int64 // subscriptions resumed on a new connection
	Duplicates int64 // notifications dropped as already received
	Orphans    int64 // notifications of subscriptions the client no longer holds
	Lost       int64 // subscriptions ended with ErrLost
}

// Stats returns the counters so far.
func (c *Client) Stats() Stats {
	return Stats{c.stats.reconnects.Load(), c.stats.resumes.Load(), c.stats.duplicates.Load(), c.stats.orphans.Load(), c.stats.lost.Load()}
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
	cn := c.cur
	c.mu.Unlock()
	if cn != nil {
		cn.ws.NetConn().Close()
	}
}

// Dial connects to a broker's WebSocket endpoint, such as
// "ws://127.0.0.1:8080/ws". Only this first connection's failure is
// returned; later drops reconnect in the background.
func Dial(ctx context.Context, url string, opts Options) (*Client, error) {
	opts.withDefaults()
	cn, err := dial(ctx, url, &opts)
	if err != nil {
		return nil, err
	}
	c := &Client{url: url, opts: opts, ready: make(chan struct{}), pending: map[string]*call{},
		subs: map[string]*Subscription{}, done: make(chan struct{})}
	c.attach(cn)
	c.readers.Add(1)
	go c.sweep()
	return c, nil
}

// attach makes cn the connection and starts its reader.
func (c *Client) attach(cn *conn) {
	c.mu.Lock()
	c.cur = cn
	close(c.ready)
	c.mu.Unlock()
	c.readers.Add(1)
	go c.read(cn)
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
	cn := c.cur
	subs := c.subs
	c.subs = map[string]*Subscription{}
	c.mu.Unlock()
	var err error
	if cn != nil {
		cn.wmu.Lock()
		cn.ws.SetWriteDeadline(time.Now().Add(time.Second))
		cn.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")) // best effort
		cn.wmu.Unlock()
		err = cn.ws.Close()
	}
	c.readers.Wait()
	for _, s := range subs {
		s.finish(ErrClosed, true)
	}
	return err
}

// connected waits for a connection.
func (c *Client) connected(ctx context.Context) (*conn, error) {
	for {
		c.mu.Lock()
		cn, ready, closed := c.cur, c.ready, c.closed
		c.mu.Unlock()
		switch {
		case closed:
			return nil, ErrClosed
		case cn != nil:
			return cn, nil
		}
		select {
		case <-ready:
		case <-c.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// send writes req on cn (nil: the current connection, waited for) with a
// fresh id; fn gets the reply. An error means fn will not run.
func (c *Client) send(ctx context.Context, cn *conn, req *wireRequest, fn func(*wireReply, error)) error {
	if cn == nil {
		var err error
		if cn, err = c.connected(ctx); err != nil {
			return err
		}
	}
	if req.UID == "" {
		req.UID = c.opts.UID
	}
	c.mu.Lock()
	if c.cur != cn {
		c.mu.Unlock()
		return ErrConnectionLost
	}
	c.nextID++
	req.ID = strconv.FormatUint(c.nextID, 10)
	c.pending[req.ID] = &call{fn: fn}
	c.mu.Unlock()
	b, err := json.Marshal(req)
	if err != nil {
		c.mu.Lock()
		delete(c.pending, req.ID)
		c.mu.Unlock()
		return fmt.Errorf("cellcast: encoding the request: %w", err)
	}
	// A failed write closes the connection: the reader fails the call.
	cn.write(b)
	return nil
}

// request sends req and waits for its reply, which onReply turns into a
// value on the reader, so that a subscription is in place before the
// frames after its reply are read. If the caller stops waiting first,
// abandon gets that value.
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
			var zero T
			return zero, ctx.Err()
		}
	}
}

// read serves one connection until it drops.
func (c *Client) read(cn *conn) {
	defer c.readers.Done()
	err := cn.readLoop(func(data []byte) {
		if isNotification(data) {
			c.notify(data)
			return
		}
		rep := &wireReply{}
		if err := json.Unmarshal(data, rep); err != nil {
			c.opts.Log.Error("cellcast client: unreadable frame", "err", err, "frame", fmt.Sprintf("%.200q", data))
			return
		}
		c.reply(cn, rep)
	})
	c.lost(cn, err)
}

// reply files a reply or a page of one, and completes its call once the
// last page is in.
func (c *Client) reply(cn *conn, rep *wireReply) {
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
		*cl.list = append(*cl.list, rep.Results...)
		cl.rep.More, cl.rep.Next = rep.More, rep.Next
	} else {
		cl.rep, cl.list = rep, &rep.Results
		if rep.Op == "published" {
			cl.list = &rep.Recent
		}
	}
	if cl.rep.More {
		next := cl.rep.Next
		c.mu.Unlock()
		if next != "" { // cursor mode: pull the next page, under the same id
			b, _ := json.Marshal(&wireRequest{ID: rep.ID, Op: "page", Cursor: next})
			go cn.write(b)
		}
		return
	}
	delete(c.pending, rep.ID)
	c.mu.Unlock()
	cl.fn(cl.rep, nil)
}

// notify routes a notification to its subscription, dropping what that
// subscription has already received.
func (c *Client) notify(data []byte) {
	sid, seq, pub, err := splitNotification(data)
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
	if seq <= s.last.Load() {
		c.stats.duplicates.Add(1)
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

// lost fails the calls of a dropped connection and reconnects.
func (c *Client) lost(cn *conn, err error) {
	cn.ws.Close()
	c.mu.Lock()
	if c.cur != cn {
		c.mu.Unlock()
		return
	}
	c.cur = nil
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
	if !closed {
		if c.opts.OnDisconnect != nil {
			c.opts.OnDisconnect(err)
		}
		c.opts.Log.Info("cellcast client: connection lost; reconnecting", "url", c.url, "err", err)
		c.readers.Add(1)
		go c.reconnect()
	}
}

// reconnect dials until it succeeds or the client closes, then resumes
// every subscription from the last sequence number it received.
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
		cn, err := dial(ctx, c.url, &c.opts)
		cancel()
		if err != nil {
			c.opts.Log.Debug("cellcast client: redial failed", "err", err, "retry_in", wait)
			continue
		}
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			cn.ws.Close()
			return
		}
		subs := make([]*Subscription, 0, len(c.subs))
		for _, s := range c.subs {
			subs = append(subs, s)
		}
		c.mu.Unlock()
		c.stats.reconnects.Add(1)
		c.attach(cn)
		for _, s := range subs {
			c.resume(cn, s)
		}
		return
	}
}

// resume asks cn's broker to replay s from the last sequence number
// received and route it to cn. A transient refusal is retried; a
// subscription the broker no longer knows is lost.
func (c *Client) resume(cn *conn, s *Subscription) {
	after := s.last.Load()
	err := c.send(context.Background(), cn, &wireRequest{Op: "resume", UID: s.uid, Sid: s.Sid, After: &after}, func(rep *wireReply, err error) {
		if err != nil {
			return // the connection dropped again: the next one resumes
		}
		err = rep.err()
		switch {
		case err == nil:
			c.stats.resumes.Add(1)
			c.mu.Lock()
			s.held = true
			c.mu.Unlock()
		case errors.Is(err, ErrNotFound):
			c.end(s, ErrLost)
		default: // overloaded, unavailable, internal: try again
			wait := c.opts.MinBackoff
			var e *Error
			if errors.As(err, &e) && e.RetryAfter > 0 {
				wait = e.RetryAfter
			}
			c.opts.Log.Warn("cellcast client: resume refused; retrying", "sid", s.Sid, "err", err, "retry_in", wait)
			time.AfterFunc(wait, func() { c.resume(cn, s) })
		}
	})
	if err != nil && !errors.Is(err, ErrConnectionLost) {
		c.opts.Log.Warn("cellcast client: resume", "sid", s.Sid, "err", err)
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

// sweep ends subscriptions whose window is over. Without a lifecycle
// event from the broker, EndGrace past the window is when a late
// notification is no longer expected.
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
			c.mu.Lock()
			for _, s := range c.subs {
				if now.After(s.ExpiresAt.Add(c.opts.EndGrace)) {
					why := ErrWindowOver
					if !s.held {
						why = ErrLost
					}
					es = append(es, ended{s, why})
				}
			}
			c.mu.Unlock()
			for _, e := range es {
				c.end(e.s, e.why)
			}
		}
	}
}
