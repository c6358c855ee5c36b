package main

import (
	"context"
	"io"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed84792017/cellcast/client"
)

// conn is one Go client (package client) with up to -window requests in
// flight, each waited for on a goroutine of its own, so a connection
// pipelines as the broker's clients do. Notifications go to an inline
// handler that only records them: the load generator must not spend the
// CPU it measures the broker with.
type conn struct {
	c        *client.Client
	window   chan struct{}
	inflight sync.WaitGroup

	// Written by the client's reader only (the inline handler); read
	// after the client is closed.
	pairs    []pair
	lat      []int32 // µs
	lastNote atomic.Int64
}

func dial(addr string, enc client.Encoding) (*conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, "ws://"+addr+"/ws", client.Options{Encoding: enc, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, err
	}
	return &conn{c: c, window: make(chan struct{}, *window)}, nil
}

func dialAll(addr string, n int, enc client.Encoding) ([]*conn, error) {
	cs := make([]*conn, n)
	for i := range cs {
		var err error
		if cs[i], err = dial(addr, enc); err != nil {
			return nil, err
		}
	}
	return cs, nil
}

// do runs op once the window has room.
func (c *conn) do(op func(ctx context.Context)) {
	c.window <- struct{}{}
	c.inflight.Add(1)
	go func() {
		defer func() { <-c.window; c.inflight.Done() }()
		op(context.Background())
	}()
}

// drain waits for every request's reply. Nothing may call do meanwhile.
func (c *conn) drain() { c.inflight.Wait() }

// close ends the client; the recorded notifications are final then.
func (c *conn) close() { c.c.Close() }

// note records a notification: the pair for the oracle and the latency
// from the publication's stamp (in its pid) to now.
func (c *conn) note(n client.Notification) {
	now := time.Now().UnixNano()
	tp := stamp(n.Publication.Pid)
	c.pairs = append(c.pairs, pair{stamp(n.Sid), tp})
	c.lat = append(c.lat, int32(min((now-tp)/1000, math.MaxInt32)))
	c.lastNote.Store(now)
}

func (c *conn) subscribe(bk *book, uid string, lat, lng float64, future time.Duration) {
	c.do(func(ctx context.Context) {
		s, err := c.c.Subscribe(ctx, client.SubscribeRequest{Location: client.Point(lat, lng), UID: uid, Past: *past, Future: future,
			Inline: true, Handler: c.note})
		if err != nil {
			bk.fail(err)
			return
		}
		bk.subscribed(s)
	})
}

func (c *conn) publish(bk *book, cell string, live bool) {
	c.do(func(ctx context.Context) {
		p, err := c.c.Publish(ctx, client.PublishRequest{Location: client.Cell(cell), UID: "reporter", Expires: *expires, Desc: "incident"})
		if err != nil {
			bk.fail(err)
			return
		}
		bk.published(p, live)
	})
}
