package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/seed84792017/cellcast/auth"
	"github.com/seed84792017/cellcast/broker"
)

var jwtRE = regexp.MustCompile(`eyJ[\w-]+\.[\w-]+\.[\w-]+`)

// mint runs cellcast token and returns the token.
func mint(t *testing.T, e env, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), append([]string{"token"}, args...), e, &stdout, &stderr); code != 0 {
		t.Fatalf("token %v: exit %d: %s", args, code, stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

// TestAuthGolden: tokens with the claims a broker may require, used as
// --token over WebSocket and in the URL over NATS, where the token names
// the user; what a broker under auth refuses, on one line.
func TestAuthGolden(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("k", 40)), 0o600); err != nil {
		t.Fatal(err)
	}
	b := runBroker(t, broker.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", HMACSecretFile: secret,
		AuthIssuer: "cellcast-test", AuthAudience: "brokers"})
	defer b.Shutdown(context.Background())
	ws := "ws://" + b.HTTPAddr() + "/ws"
	s := sessionWith(t, map[string]string{"CELLCAST_AUTH_HMAC_SECRET_FILE": secret})
	claims := []string{"--auth-issuer", "cellcast-test", "--auth-audience", "brokers"}
	alice := mint(t, s.env, append([]string{"--uid", "alice"}, claims...)...)
	h, _ := auth.LoadHMAC(secret)
	h.Issuer, h.Audience = "cellcast-test", "brokers"
	if id, err := h.Verify(alice); err != nil || id.UID != "alice" {
		t.Fatalf("alice's token: %+v, %v", id, err)
	}
	bare := mint(t, s.env, "--uid", "alice")
	natsURL := strings.Replace(b.NATSURL(), "nats://", "nats://"+alice+"@", 1)

	s.run("token", "--uid", "alice", "--auth-issuer", "cellcast-test", "--auth-audience", "brokers", "--ttl", "1h")
	s.runEnv(map[string]string{"CELLCAST_TOKEN_UID": "bob"}, "token")
	s.runEnv(map[string]string{"CELLCAST_UID": "bob"}, "token")
	s.run("token", "--uid", "alice", "--ttl", "-1h")
	// The token in the NATS URL names the user: no --uid, no --token.
	stop := s.background("sub", "--server", natsURL, "--cell", "2", "--future", "1m")
	s.run("pub", "--server", ws, "--token", alice, "--cell", "2.1", "--desc", "over the url")
	stop(1)
	s.run("query", "--server", natsURL, "--attr", "uid", "--eq", "alice")
	s.run("pub", "--server", b.NATSURL(), "--token", alice, "--cell", "2.1", "--desc", "over nats, token as a flag")
	// Refusals.
	s.run("pub", "--server", natsURL, "--uid", "bob", "--cell", "2.1")
	s.run("pub", "--server", ws, "--token", alice, "--uid", "bob", "--cell", "2.1")
	s.run("query", "--server", ws, "--token", bare, "--attr", "uid", "--eq", "alice")
	s.run("query", "--server", b.NATSURL(), "--token", "not-a-jwt-0123456789", "--attr", "uid", "--eq", "alice")
	// Tokens first: an id pattern may match inside one.
	golden(t, "auth.golden", normalize(jwtRE.ReplaceAllString(s.out.String(), "<token>")))
}
