package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/seed84792017/cellcast/internal/buildinfo"
	"github.com/seed84792017/cellcast/internal/flagenv"
)

// noEnv is an empty environment, so the tests do not read the machine's
// CELLCAST_* variables.
func noEnv(string) (string, bool) { return "", false }

// runBroker runs the command in process and returns its exit code and
// what it wrote.
func runBroker(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	// A broker that starts when it should not stops again, and fails the test.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	code = run(ctx, args, noEnv, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestVersion(t *testing.T) {
	want := "broker " + buildinfo.Read().String() + "\n"
	for _, args := range [][]string{{"--version"}, {"version"}, {"--data", "/nonexistent", "--version"}} {
		code, out, errOut := runBroker(args...)
		if code != 0 || out != want || errOut != "" {
			t.Fatalf("%q: exit %d, stdout %q, stderr %q; want 0 and %q", args, code, out, errOut, want)
		}
	}
	// A CELLCAST_VERSION in the environment neither prints nor fails.
	fs, s := brokerFlags()
	fs.SetOutput(io.Discard)
	env := func(k string) (string, bool) { return "1.2.3", k == "CELLCAST_VERSION" }
	if err := flagenv.ParseWith(fs, nil, brokerOptions(env)); err != nil || *s.version {
		t.Fatalf("CELLCAST_VERSION was read: %v, version %v", err, *s.version)
	}
}

func TestHelpMentionsConfig(t *testing.T) {
	code, _, help := runBroker("--help")
	if code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	for _, want := range []string{"--config", "CELLCAST_CONFIG", "broker version", "--version"} {
		if !strings.Contains(help, want) {
			t.Fatalf("--help does not mention %s:\n%s", want, help)
		}
	}
}

// TestTakenPortExitsAtOnce: --http on a port another process holds,
// here given by the config file, ends the command within a second with
// exit code 1 and an error naming the address.
func TestTakenPortExitsAtOnce(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	cfg := filepath.Join(t.TempDir(), "broker.toml")
	if err := os.WriteFile(cfg, []byte("http = "+strconv.Quote(addr)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--http", addr},
		{"--config", cfg},
		{"--http", "127.0.0.1:0", "--nats-listen", addr},
	} {
		args = append([]string{"--data", t.TempDir(), "--nats-listen", "127.0.0.1:0"}, args...)
		began := time.Now()
		code, _, errOut := runBroker(args...)
		if took := time.Since(began); code != 1 || took > time.Second || !strings.Contains(errOut, "cannot listen on "+addr) {
			t.Fatalf("%q: exit %d after %v:\n%s", args, code, took, errOut)
		}
	}
}

func TestBadConfigExitsWithTheKeyAndLine(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "broker.toml")
	if err := os.WriteFile(cfg, []byte("data = \"d\"\nnats_url = \"nats://x\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runBroker("--config", cfg)
	if code != 2 || !strings.Contains(errOut, cfg+", line 2, key \"nats_url\": unknown key") {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
}

// TestDocsConfigExample: docs/broker.example.toml is accepted
// by the broker's flags, sets each flag to what it says, and names every
// flag that a config file can set.
func TestDocsConfigExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/broker.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	block := string(doc)
	path := filepath.Join(t.TempDir(), "broker.toml")
	if err := os.WriteFile(path, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	fs, _ := brokerFlags()
	fs.SetOutput(io.Discard)
	if err := flagenv.ParseWith(fs, []string{"--config", path}, brokerOptions(noEnv)); err != nil {
		t.Fatalf("the example is refused: %v", err)
	}
	var keys map[string]any
	if _, err := toml.Decode(block, &keys); err != nil {
		t.Fatal(err)
	}
	changed := 0
	for key, v := range keys {
		// What the flag holds after the same value on a command line.
		want, _ := brokerFlags()
		if err := want.Set(key, flagText(v)); err != nil {
			t.Fatalf("%s = %v: %v", key, v, err)
		}
		got := fs.Lookup(key)
		if got.Value.String() != want.Lookup(key).Value.String() {
			t.Errorf("%s = %v in the example, %s after parsing it", key, v, got.Value)
		}
		if got.Value.String() != got.DefValue {
			changed++
		}
	}
	if changed == 0 {
		t.Error("the example sets every flag to its default: it would pass unread")
	}
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := keys[f.Name]; !ok && f.Name != "config" && f.Name != "version" {
			t.Errorf("the example has no key %s", f.Name)
		}
	})
}

// flagText is a TOML value as a command line gives it.
func flagText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	panic(fmt.Sprintf("no flag takes a TOML %T", v))
}

// TestOpenRoutesBeyondLoopbackRefused: a cluster node whose route listener
// others can reach does not start without the route password and TLS, and
// says which flags it needs.
func TestOpenRoutesBeyondLoopbackRefused(t *testing.T) {
	code, _, errOut := runBroker("--data", t.TempDir(), "--http", "127.0.0.1:0", "--nats-listen", "127.0.0.1:0",
		"--cluster-node", "n1", "--cluster-listen", "0.0.0.0:0", "--auth-tokens", writeTokens(t))
	if code != 1 || !strings.Contains(errOut, "--cluster-password-file") || !strings.Contains(errOut, "--cluster-tls-ca") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func writeTokens(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(p, []byte("0123456789abcdef0123456789abcdef alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTokenReadsItsOwnVariables: broker token takes the user to mint for
// from CELLCAST_TOKEN_UID, as cellcast token does, not from CELLCAST_UID
// (the user a command acts as).
func TestTokenReadsItsOwnVariables(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CELLCAST_UID": "mallory", "CELLCAST_TOKEN_UID": "alice", "CELLCAST_AUTH_HMAC_SECRET_FILE": secret}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"token"}, lookup, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	parts := strings.Split(strings.TrimSpace(out.String()), ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", out.String())
	}
	claims, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || !strings.Contains(string(claims), `"sub":"alice"`) {
		t.Fatalf("claims %s (%v), want sub alice", claims, err)
	}
}
