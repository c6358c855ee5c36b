package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/seed84792017/cellcast/auth"
)

// token mints an HS256 bearer token, as broker token does: the uid in
// "sub", an "exp" after --ttl, and the "iss" and "aud" a broker may
// require (--auth-issuer, --auth-audience).
func token(_ context.Context, args []string, e env, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	uid := fs.String("uid", "", "the user the token stands for (its \"sub\" claim)")
	ttl := fs.Duration("ttl", 24*time.Hour, "validity (the \"exp\" claim); 0 for no expiry, which the broker refuses unless --auth-allow-no-expiry")
	secret := fs.String("auth-hmac-secret-file", "", "the broker's HMAC secret file")
	iss := fs.String("auth-issuer", "", "the \"iss\" claim, when the broker requires one")
	aud := fs.String("auth-audience", "", "the \"aud\" claim, when the broker requires one")
	if code, ok := parse(fs, args, e, stdout, stderr); !ok {
		return code
	}
	if *uid == "" || *secret == "" {
		return usageError(stderr, "token", "--uid and --auth-hmac-secret-file are required")
	}
	if err := negative("ttl", *ttl, "no expiry"); err != nil {
		return usageError(stderr, "token", err.Error())
	}
	h, err := auth.LoadHMAC(*secret)
	if err != nil {
		return fail(stderr, "token", err)
	}
	h.Issuer, h.Audience = *iss, *aud
	tok, err := h.Sign(*uid, *ttl)
	if err != nil {
		return fail(stderr, "token", err)
	}
	fmt.Fprintln(stdout, tok)
	return 0
}
