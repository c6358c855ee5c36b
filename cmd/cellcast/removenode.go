package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// removeNode asks a running cluster node, at its /admin/cluster/remove
// endpoint, to remove a stopped node from the cluster for good.
func removeNode(ctx context.Context, args []string, e env, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("remove-node", flag.ContinueOnError)
	admin, token := adminFlags(fs)
	node := fs.String("node", "", "the stopped node to remove: its --cluster-node")
	if code, ok := parse(fs, args, e, stdout, stderr); !ok {
		return code
	}
	if *node == "" {
		fmt.Fprintln(stderr, "cellcast remove-node: --node ID is required")
		return 2
	}
	resp, err := callAdmin(ctx, http.MethodPost, *admin, "/admin/cluster/remove?node="+url.QueryEscape(*node), *token)
	if err != nil {
		return fail(stderr, "remove-node", err)
	}
	defer resp.Body.Close()
	io.Copy(stdout, io.LimitReader(resp.Body, 4<<10))
	return 0
}
