package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed84792017/cellcast/broker"
)

func startBroker(t *testing.T, dir, metricsToken string) *broker.Broker {
	t.Helper()
	b, err := broker.Start(broker.Config{DataDir: dir, HTTPAddr: "127.0.0.1:0", NATSListen: "127.0.0.1:0", MetricsToken: metricsToken,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Shutdown(context.Background()) })
	return b
}

// TestBackupRestoresOnASecondBroker publishes, backs the broker up with
// cellcast backup, starts another broker on the directory it made, and
// finds the publications there; and checks the refusals.
func TestBackupRestoresOnASecondBroker(t *testing.T) {
	b := startBroker(t, t.TempDir(), "tok")
	vars := map[string]string{"CELLCAST_SERVER": "ws://" + b.HTTPAddr() + "/ws"}
	e := env{lookup: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }, user: func() string { return "tester" }}
	cmd := func(args ...string) (string, string, int) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, e, &stdout, &stderr)
		return stdout.String(), stderr.String(), code
	}
	for _, d := range []string{"one", "two"} {
		if _, errOut, code := cmd("pub", "--cell", "5.2.1", "--expires", "1h", "--desc", d); code != 0 {
			t.Fatalf("pub: %d %s", code, errOut)
		}
	}
	out := filepath.Join(t.TempDir(), "restored")
	admin := "http://" + b.HTTPAddr()

	if _, errOut, code := cmd("backup", "--admin", admin, "--out", out); code != 1 || !strings.Contains(errOut, "401 Unauthorized") {
		t.Fatalf("without the token: exit %d, %q", code, errOut)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("a refused backup left a directory")
	}
	if _, errOut, code := cmd("backup", "--admin", admin); code != 2 || !strings.Contains(errOut, "--out DIR is required") {
		t.Fatalf("without --out: exit %d, %q", code, errOut)
	}
	vars["CELLCAST_METRICS_TOKEN"] = "tok"
	stdout, errOut, code := cmd("backup", "--admin", admin, "--out", out)
	if code != 0 || !strings.Contains(stdout, "restore with: broker --data "+out) {
		t.Fatalf("backup: exit %d, %q %q", code, stdout, errOut)
	}
	if _, errOut, code := cmd("backup", "--admin", admin, "--out", out); code != 2 || !strings.Contains(errOut, "exists") {
		t.Fatalf("into an existing directory: exit %d, %q", code, errOut)
	}

	b2 := startBroker(t, out, "")
	vars["CELLCAST_SERVER"] = "ws://" + b2.HTTPAddr() + "/ws"
	stdout, errOut, code = cmd("sub", "--cell", "5.2", "--past", "1h", "--future", "0")
	if code != 0 || !strings.Contains(stdout, "one") || !strings.Contains(stdout, "two") {
		t.Fatalf("past results on the restored broker: exit %d, %q %q", code, stdout, errOut)
	}
}
