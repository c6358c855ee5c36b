package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// adminFlags are the flags of a command that calls a broker's operator
// endpoints (/admin/): where they are served, and the token they need.
func adminFlags(fs *flag.FlagSet) (admin, token *string) {
	admin = fs.String("admin", "http://127.0.0.1:8080", "where the broker serves /metrics: its --http address, or --metrics-listen's")
	token = fs.String("metrics-token", "", "the broker's --metrics-token, when it has one")
	return admin, token
}

// callAdmin sends method to path under admin with the token, and returns
// the response when it is 200 OK; otherwise an error with its status and
// the start of its body.
func callAdmin(ctx context.Context, method, admin, path, token string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(admin, "/")+path, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	return resp, nil
}
