package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed84792017/cellcast/protocol"
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
	// subsGen counts the subscriptions dropped from subs (under mu), so
	// the reader knows when its last lookup may be stale.
	subsGen atomic.Uint64

	// Only the reader uses rd, and one reader runs at a time.
	rd struct {
		sub    *Subscription // the last one a notification went to
		subGen uint64        // subsGen when sub was looked up
		stamps stampCache
		to     []recipient     // a grouped frame's, kept for the next one
		subs   []*Subscription // and their subscriptions
	}

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
// flight fail with ErrConnectionLost. The loss is taken at once, not when
// the reader notices it: a request made after ForceReconnect returns waits
// for the new connection rather than going out on the dead one.
func (c *Client) ForceReconnect() {
	c.mu.Lock()
	tr := c.cur
	c.mu.Unlock()
	if tr != nil {
		tr.abort()
		c.lost(tr, errForced)
	}
}

// errForced is the loss ForceReconnect reports to OnDisconnect.
var errForced = errors.New("cellcast: reconnect forced")

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
	if n, ok := tr.(*natsConn); ok && (req.Op == protocol.OpSubscribe || req.Op == protocol.OpResume) {
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
	b, err := encodeRequest(tr, req)
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
