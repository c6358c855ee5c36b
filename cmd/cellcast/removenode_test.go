package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestRemoveNodeSaysWhatTheBrokerSays: cellcast remove-node sends the
// token and reports the broker's refusal; the endpoint's work on a
// cluster is TestRemoveNode in package broker.
func TestRemoveNodeSaysWhatTheBrokerSays(t *testing.T) {
	b := startBroker(t, t.TempDir(), "tok")
	vars := map[string]string{}
	e := env{lookup: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }, user: func() string { return "tester" }}
	cmd := func(args ...string) (string, int) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"remove-node", "--admin", "http://" + b.HTTPAddr()}, args...), e, &stdout, &stderr)
		return stdout.String() + stderr.String(), code
	}
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{nil, 2, "--node ID is required"},
		{[]string{"--node", "n1"}, 1, "401 Unauthorized"},
		{[]string{"--node", "n1", "--metrics-token", "tok"}, 1, "409 Conflict: conflict: this broker is not a cluster node"},
	} {
		if out, code := cmd(c.args...); code != c.code || !strings.Contains(out, c.says) {
			t.Errorf("remove-node %q: exit %d, %q; want %d and %q", c.args, code, out, c.code, c.says)
		}
	}
	vars["CELLCAST_METRICS_TOKEN"] = "tok"
	if out, code := cmd("--node", "n1"); code != 1 || !strings.Contains(out, "not a cluster node") {
		t.Errorf("with the token from CELLCAST_METRICS_TOKEN: exit %d, %q", code, out)
	}
}
