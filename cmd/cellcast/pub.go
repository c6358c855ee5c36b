package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/seed84792017/cellcast/client"
)

// attrs collects repeated --attr k=v flags.
type attrs map[string]string

func (a attrs) String() string { return fmt.Sprint(map[string]string(a)) }

func (a attrs) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: want key=value", v)
	}
	a[k] = val
	return nil
}

func pub(ctx context.Context, args []string, e env, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pub", flag.ContinueOnError)
	var c conn
	var loc location
	c.flags(fs)
	loc.flags(fs)
	expires := fs.Duration("expires", time.Minute, "lifetime; 0: notify the live subscriptions, store nothing")
	desc := fs.String("desc", "", "the description")
	at := attrs{}
	fs.Var(at, "attr", "an attribute key=value (repeat for more)")
	selfJoin := fs.Bool("self-join", false, "also print the cell's recent publications")
	if code, ok := parse(fs, args, e, stdout, stderr); !ok {
		return code
	}
	if err := firstError(c.check(), negative("expires", *expires, "notify the live subscriptions, store nothing")); err != nil {
		return usageError(stderr, "pub", err.Error())
	}
	where, err := loc.get(e.stdin)
	if err != nil {
		return usageError(stderr, "pub", err.Error())
	}
	cl, err := c.dial(ctx, c.options(e, stderr))
	if err != nil {
		return c.fail(stderr, "pub", err)
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req := client.PublishRequest{Location: where, Expires: *expires, Desc: *desc, SelfJoin: *selfJoin}
	if len(at) > 0 {
		req.Attrs = at
	}
	p, err := cl.Publish(rctx, req)
	if err != nil {
		return c.fail(stderr, "pub", err)
	}
	pr := &printer{w: stdout, json: c.json}
	if c.json {
		pr.object(struct {
			Pid       string   `json:"pid"`
			Cell      string   `json:"cell"`
			Cover     []string `json:"cover,omitempty"`
			Tp        string   `json:"tp"`
			ExpiresAt string   `json:"expires_at"`
			Matched   int      `json:"matched"`
		}{p.Pid, p.Cell, p.Cover, stamp(p.Tp), stamp(p.ExpiresAt), p.Matched})
	} else {
		life := "expires " + p.ExpiresAt.Local().Format("15:04:05")
		if !p.ExpiresAt.After(p.Tp) {
			life = "not stored"
		}
		fmt.Fprintf(stdout, "published %s at %s, matched %d live subscriptions, %s\n", p.Pid, cells(p.Cell, p.Cover), p.Matched, life)
	}
	for i := range p.Recent {
		pr.publication("recent", "", 0, &p.Recent[i])
	}
	return 0
}
