package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/seed84792017/cellcast/auth"
)

// token mints an HS256 bearer token, as broker token does.
func token(_ context.Context, args []string, e env, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	uid := fs.String("uid", "", "the user the token stands for")
	ttl := fs.Duration("ttl", 24*time.Hour, "validity; 0 for no expiry")
	secret := fs.String("auth-hmac-secret-file", "", "the broker's HMAC secret file")
	if code, ok := parse(fs, args, e, stderr); !ok {
		return code
	}
	if *uid == "" || *secret == "" {
		fmt.Fprintln(stderr, "cellcast token: --uid and --auth-hmac-secret-file are required")
		return 2
	}
	h, err := auth.LoadHMAC(*secret)
	if err != nil {
		return fail(stderr, "token", err)
	}
	tok, err := h.Sign(*uid, *ttl)
	if err != nil {
		return fail(stderr, "token", err)
	}
	fmt.Fprintln(stdout, tok)
	return 0
}
