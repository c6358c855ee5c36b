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
	if code, ok := parse(fs, args, e, stderr); !ok {
		return code
	}
	where, err := loc.get(e.stdin)
	if err != nil {
		fmt.Fprintln(stderr, "cellcast sub:", err)
		return 2
	}
	cl, err := c.dial(ctx, e, stderr)
	if err != nil {
		return fail(stderr, "sub", err)
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
		return fail(stderr, "sub", err)
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
					return fail(stderr, "sub", err)
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
			if err != nil {
				fmt.Fprintln(stderr, "cellcast sub: unsubscribe:", err)
			} else if !c.json {
				fmt.Fprintln(stderr, "unsubscribed")
			}
			return 0
		}
	}
}
