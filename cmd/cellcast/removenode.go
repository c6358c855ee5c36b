package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// removeNode asks a running cluster node, at its /admin/cluster/remove
// endpoint, to remove a stopped node from the cluster for good.
func removeNode(ctx context.Context, args []string, e env, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("remove-node", flag.ContinueOnError)
	admin := fs.String("admin", "http://127.0.0.1:8080", "where a running node serves /metrics: its --http address, or --metrics-listen's")
	token := fs.String("metrics-token", "", "the node's --metrics-token, when it has one")
	node := fs.String("node", "", "the stopped node to remove: its --cluster-node")
	if code, ok := parse(fs, args, e, stdout, stderr); !ok {
		return code
	}
	if *node == "" {
		fmt.Fprintln(stderr, "cellcast remove-node: --node ID is required")
		return 2
	}
	u := strings.TrimSuffix(*admin, "/") + "/admin/cluster/remove?node=" + url.QueryEscape(*node)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return fail(stderr, "remove-node", err)
	}
	if *token != "" {
		req.Header.Set("Authorization", "Bearer "+*token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fail(stderr, "remove-node", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fail(stderr, "remove-node", fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(msg))))
	}
	fmt.Fprint(stdout, string(msg))
	return 0
}
