package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/seed84792017/cellcast/client"
	"github.com/seed84792017/cellcast/protocol"
)

// sub prints a subscription's past results, then its notifications until
// the window ends or ctx does (^C), when it unsubscribes.
func sub(ctx context.Context, args []string, e env, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sub", flag.ContinueOnError)
	var c conn
	var loc location
	c.flags(fs)
	loc.flags(fs)
	past := fs.Duration("past", 0, "how far back past results reach")
	future := fs.Duration("future", time.Minute, "how long to listen; 0: past results only")
	selfJoin := fs.Bool("self-join", false, "leave out what your earlier subscriptions already returned")
	keyword := fs.String("filter", "", "only publications whose description holds this keyword (case-insensitive)")
	if code, ok := parse(fs, args, e, stdout, stderr); !ok {
		return code
	}
	if err := firstError(c.check(), negative("past", *past, "no past results"), negative("future", *future, "past results only")); err != nil {
		return usageError(stderr, "sub", err.Error())
	}
	where, err := loc.get(e.stdin)
	if err != nil {
		return usageError(stderr, "sub", err.Error())
	}
	opts := c.options(e, stderr)
	// Say at once that the broker went away, and when each subscription
	// is back: the wait is otherwise silent.
	opts.OnDisconnect = func(err error) {
		fmt.Fprintf(stderr, "cellcast sub: connection lost (%s); reconnecting\n", describe(err))
	}
	opts.OnResume = func(sid string, after int64) {
		if after == 0 {
			fmt.Fprintf(stderr, "cellcast sub: resumed %s from the start of its window\n", sid)
		} else {
			fmt.Fprintf(stderr, "cellcast sub: resumed %s after seq %d\n", sid, after)
		}
	}
	cl, err := c.dial(ctx, opts)
	if err != nil {
		return c.fail(stderr, "sub", err)
	}
	defer cl.Close()
	req := client.SubscribeRequest{Location: where, Past: *past, Future: *future, SelfJoin: *selfJoin}
	if *keyword != "" {
		req.Filter = &client.Filter{Keyword: *keyword}
	}
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	s, err := cl.Subscribe(rctx, req)
	cancel()
	if err != nil {
		return c.fail(stderr, "sub", err)
	}
	pr := &printer{w: stdout, json: c.json}
	if c.json {
		pr.object(struct {
			Op        string   `json:"op"`
			Sid       string   `json:"sid"`
			Cell      string   `json:"cell"`
			Cover     []string `json:"cover,omitempty"`
			ExpiresAt string   `json:"expires_at"`
			Past      int      `json:"past"`
		}{protocol.OpSubscribed, s.Sid, s.Cell, s.Cover, stamp(s.ExpiresAt), len(s.Past)})
	} else {
		fmt.Fprintf(stderr, "subscribed %s at %s until %s, %d past\n", s.Sid, cells(s.Cell, s.Cover), s.ExpiresAt.Local().Format("15:04:05"), len(s.Past))
	}
	// Past results come newest first; print them oldest first, so that
	// the live ones follow on in time.
	for i := len(s.Past) - 1; i >= 0; i-- {
		pr.publication("past", s.Sid, 0, &s.Past[i])
	}
	for {
		select {
		case n, ok := <-s.C:
			if !ok {
				if err := s.Err(); !errors.Is(err, client.ErrWindowOver) {
					return c.fail(stderr, "sub", err)
				}
				if !c.json {
					fmt.Fprintln(stderr, "window over")
				}
				return 0
			}
			pr.publication("live", n.Sid, n.Seq, &n.Publication)
		case <-ctx.Done():
			uctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err := s.Unsubscribe(uctx)
			cancel()
			switch {
			case err != nil && !cl.Connected():
				fmt.Fprintf(stderr, "cellcast sub: not connected, so not unsubscribed: %s ends with its window at %s\n", s.Sid, s.ExpiresAt.Local().Format("15:04:05"))
			case err != nil:
				fmt.Fprintf(stderr, "cellcast sub: unsubscribe: %s\n", describe(err))
			case !c.json:
				fmt.Fprintln(stderr, "unsubscribed")
			}
			return 0
		}
	}
}
