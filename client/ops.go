package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seed84792017/cellcast/protocol"
)

// Subscribe stores a subscription and returns it with its past results.
// Its notifications follow on C or through r.Handler until its window
// ends. If ctx ends before the reply, a subscription the broker made
// anyway is cancelled.
func (c *Client) Subscribe(ctx context.Context, r SubscribeRequest) (*Subscription, error) {
	req := &wireRequest{Op: protocol.OpSubscribe, UID: r.UID, SelfJoin: r.SelfJoin}
	var err error
	if req.Past, err = duration("past", r.Past); err != nil {
		return nil, err
	}
	if req.Future, err = duration("future", r.Future); err != nil {
		return nil, err
	}
	if err := req.locate(r.Location); err != nil {
		return nil, err
	}
	if r.Filter != nil {
		req.Filter = &wireFilter{Keyword: r.Filter.Keyword, Attrs: r.Filter.Attrs}
	}
	return request(ctx, c, req, func(rep *wireReply) (*Subscription, error) {
		if rep.Op != protocol.OpSubscribed {
			return nil, fmt.Errorf("%w: %q to a subscribe", ErrProtocol, rep.Op)
		}
		s := newSubscription(c, &r, req.UID)
		s.Sid, s.Cell, s.Cover, s.Live = rep.Sid, rep.Cell, rep.Cover, rep.Live
		var err error
		if s.Ts, err = parseTime(rep.Ts); err != nil {
			return nil, err
		}
		if s.ExpiresAt, err = parseTime(rep.ExpiresAt); err != nil {
			return nil, err
		}
		s.Past = rep.pubs
		// Registered here, on the reader, before the frames after the
		// reply (its first notifications) are read.
		if s.Live {
			c.mu.Lock()
			if c.subs[s.Sid] != nil {
				c.subsGen.Add(1) // a stale one replaced
			}
			c.subs[s.Sid] = s
			s.held = true
			c.mu.Unlock()
		} else {
			s.finish(ErrWindowOver, false)
		}
		s.start()
		return s, nil
	}, func(s *Subscription) {
		if s.Live {
			go c.unsubscribe(context.Background(), s.Sid, s.uid)
		}
	})
}

// Unsubscribe cancels a subscription; it ends with ErrCancelled.
// Notifications still on their way are dropped.
func (c *Client) Unsubscribe(ctx context.Context, sid string) error {
	c.mu.Lock()
	s := c.subs[sid]
	c.mu.Unlock()
	uid := ""
	if s != nil {
		uid = s.uid
	}
	return c.unsubscribe(ctx, sid, uid)
}

func (c *Client) unsubscribe(ctx context.Context, sid, uid string) error {
	c.mu.Lock()
	s := c.subs[sid]
	c.mu.Unlock()
	_, err := request(ctx, c, &wireRequest{Op: protocol.OpUnsubscribe, UID: uid, Sid: sid}, func(rep *wireReply) (struct{}, error) {
		if rep.Op != protocol.OpUnsubscribed {
			return struct{}{}, fmt.Errorf("%w: %q to an unsubscribe", ErrProtocol, rep.Op)
		}
		return struct{}{}, nil
	}, nil)
	if s != nil && (err == nil || errors.Is(err, ErrNotFound)) {
		c.end(s, ErrCancelled)
	}
	return err
}

// Unsubscribe cancels the subscription.
func (s *Subscription) Unsubscribe(ctx context.Context) error {
	return s.c.unsubscribe(ctx, s.Sid, s.uid)
}

// Publish stores a publication and notifies the live subscriptions it
// matches.
func (c *Client) Publish(ctx context.Context, r PublishRequest) (*Published, error) {
	expires, err := duration("expires", r.Expires)
	if err != nil {
		return nil, err
	}
	req := &wireRequest{Op: protocol.OpPublish, UID: r.UID, Expires: expires, Desc: r.Desc, Attrs: r.Attrs, SelfJoin: r.SelfJoin}
	if err := req.locate(r.Location); err != nil {
		return nil, err
	}
	return request(ctx, c, req, func(rep *wireReply) (*Published, error) {
		if rep.Op != protocol.OpPublished {
			return nil, fmt.Errorf("%w: %q to a publish", ErrProtocol, rep.Op)
		}
		p := &Published{Pid: rep.Pid, Cell: rep.Cell, Cover: rep.Cover, Matched: rep.Matched}
		var err error
		if p.Tp, err = parseTime(rep.Tp); err != nil {
			return nil, err
		}
		if p.ExpiresAt, err = parseTime(rep.ExpiresAt); err != nil {
			return nil, err
		}
		p.Recent = rep.pubs
		return p, nil
	}, nil)
}

// Query returns the latest live publications by an attribute.
func (c *Client) Query(ctx context.Context, r QueryRequest) (*Results, error) {
	req := &wireRequest{Op: protocol.OpQuery, Attr: r.Attr, K: r.K}
	switch {
	case (r.From == "") != (r.To == ""):
		// The broker would read the missing bound as a value ("").
		return nil, fmt.Errorf("%w: a range of %s needs both From and To", ErrInvalidRequest, r.Attr)
	case r.From != "":
		req.From, req.To = &r.From, &r.To
	default:
		req.Eq = &r.Eq
	}
	return request(ctx, c, req, func(rep *wireReply) (*Results, error) {
		if rep.Op != protocol.OpResults {
			return nil, fmt.Errorf("%w: %q to a query", ErrProtocol, rep.Op)
		}
		return &Results{Attr: rep.Attr, Count: rep.Count, Publications: rep.pubs}, nil
	}, nil)
}

// QueryPlace returns the latest live publications whose place meets
// r.Place, narrowed by time, attribute and filter.
func (c *Client) QueryPlace(ctx context.Context, r PlaceQuery) (*Results, error) {
	req := &wireRequest{Op: protocol.OpQuery, Attr: r.Attr, K: r.K}
	if err := req.place(r.Place); err != nil {
		return nil, err
	}
	if r.Attr != "" || r.Eq != "" {
		req.Eq = &r.Eq // the broker refuses one without the other
	}
	if !r.From.IsZero() {
		from := r.From.UTC().Format(time.RFC3339Nano)
		req.From = &from
	}
	if !r.To.IsZero() {
		to := r.To.UTC().Format(time.RFC3339Nano)
		req.To = &to
	}
	if r.Filter != nil {
		req.Filter = &wireFilter{Keyword: r.Filter.Keyword, Attrs: r.Filter.Attrs}
	}
	return request(ctx, c, req, func(rep *wireReply) (*Results, error) {
		if rep.Op != protocol.OpResults {
			return nil, fmt.Errorf("%w: %q to a query", ErrProtocol, rep.Op)
		}
		return &Results{Place: rep.Place, Count: rep.Count, Publications: rep.pubs}, nil
	}, nil)
}
