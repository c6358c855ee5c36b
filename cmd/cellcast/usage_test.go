package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/seed84792017/cellcast/internal/buildinfo"
)

// TestUsageGolden: what each command refuses before it dials (exit 2),
// one line each; durations that cannot be negative; each variable with
// one meaning, named by --help; the version.
func TestUsageGolden(t *testing.T) {
	s := newSession(t)
	s.run("--version")
	s.run("version")
	s.run("version", "extra")
	s.run("pub", "--version")
	// Negative durations are refused here, not sent as "none".
	s.run("pub", "--cell", "1.4", "--expires", "-1m", "--desc", "x", "--json")
	s.runEnv(map[string]string{"CELLCAST_PUB_EXPIRES": "-1m"}, "pub", "--cell", "1.4", "--desc", "x")
	s.run("sub", "--cell", "1.4", "--past", "-1m", "--future", "-5m")
	s.run("sub", "--cell", "1.4", "--future", "-5m")
	s.run("query", "--attr", "uid", "--eq", "tester", "--timeout", "0s")
	// Expires 0 reaches the live subscription and is not stored.
	stop := s.background("sub", "--cell", "1.4", "--future", "1m", "--uid", "other")
	s.run("pub", "--cell", "1.4.2", "--expires", "0", "--desc", "fleeting")
	stop(1)
	s.run("query", "--attr", "uid", "--eq", "tester")
	// Variables: CELLCAST_PUB_ATTR is a key=value, CELLCAST_QUERY_ATTR
	// an attribute; CELLCAST_ATTR means nothing.
	s.runEnv(map[string]string{"CELLCAST_PUB_ATTR": "category=traffic"}, "pub", "--cell", "1.4", "--desc", "jam")
	s.runEnv(map[string]string{"CELLCAST_QUERY_ATTR": "category"}, "query", "--eq", "traffic")
	s.runEnv(map[string]string{"CELLCAST_ATTR": "category=traffic"}, "query", "--eq", "traffic")
	s.runEnv(map[string]string{"CELLCAST_QUERY_K": "many"}, "query", "--attr", "uid", "--eq", "tester")
	// Ranges of an attribute are closed.
	s.run("query", "--attr", "tp", "--from", "2026-01-01T00:00:00Z")
	s.run("query", "--attr", "tp", "--to", "2026-01-01T00:00:00Z")
	s.run("query", "--attr", "tp", "--from", "2000-01-01T00:00:00Z", "--to", "2200-01-01T00:00:00Z")
	// The broker's refusal, once.
	s.run("query", "--attr", "tp", "--from", "yesterday", "--to", "today")
	for _, cmd := range []string{"sub", "pub", "query", "token"} {
		s.run(cmd, "--help")
	}
	got := strings.ReplaceAll(s.out.String(), "cellcast "+buildinfo.Read().String()+"\n", "cellcast <buildinfo>\n")
	golden(t, "usage.golden", normalize(got))
}

// TestZeroExpiry: a publication with --expires 0 expires as it is made.
func TestZeroExpiry(t *testing.T) {
	s := newSession(t)
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"pub", "--cell", "1.4", "--expires", "0", "--json"}, s.env, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var p struct {
		Tp        string `json:"tp"`
		ExpiresAt string `json:"expires_at"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &p); err != nil || p.Tp == "" || p.Tp != p.ExpiresAt {
		t.Fatalf("published %s (%v): want expires_at equal to tp", stdout.String(), err)
	}
}
