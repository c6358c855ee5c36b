package broker

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// warnOrError is a WARN or ERROR line of the text log.
var warnOrError = regexp.MustCompile(`(?m)^.*level=(WARN|ERROR).*$`)

// TestCleanStopLogsNoWarning: the real binary, with auth so that nothing
// at start deserves a warning either, stops on SIGTERM with exit code 0
// and no WARN or ERROR line (it logged "nats disconnected" err=<nil>).
func TestCleanStopLogsNoWarning(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("a-secret-token-of-some-length alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBroker(t, buildBroker(t), filepath.Join(dir, "data"), "--log-level", "info", "--auth-tokens", tokens)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit 30 s after SIGTERM:\n%s", p.out)
	}
	log := p.out.String()
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d:\n%s", code, log)
	}
	if !regexp.MustCompile(`msg="stopped cleanly"`).MatchString(log) {
		t.Fatalf("no clean stop logged:\n%s", log)
	}
	if w := warnOrError.FindAllString(log, -1); len(w) > 0 {
		t.Fatalf("a clean stop logged %q:\n%s", w, log)
	}
}

// TestTakenPortFailsFast: an address another process holds fails the
// start at once, with an error that names the address and its flag. The
// NATS port took 10 s: the embedded server never became ready.
func TestTakenPortFailsFast(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	for _, tc := range []struct {
		flag string
		set  func(*Config)
	}{
		{"--http", func(c *Config) { c.HTTPAddr = addr }},
		{"--metrics-listen", func(c *Config) { c.MetricsAddr = addr }},
		{"--nats-listen", func(c *Config) { c.NATSListen = addr }},
	} {
		cfg := Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", NATSListen: "127.0.0.1:0", Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		tc.set(&cfg)
		began := time.Now()
		b, err := Start(cfg)
		took := time.Since(began)
		if err == nil {
			b.Shutdown(t.Context())
			t.Fatalf("%s %s: started on a taken port", tc.flag, addr)
		}
		var le *ListenError
		if !errors.As(err, &le) || le.Flag != tc.flag || le.Addr != addr || !errors.Is(err, syscall.EADDRINUSE) {
			t.Fatalf("%s: got %v, want a ListenError for %s, address in use", tc.flag, err, addr)
		}
		if !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), tc.flag) {
			t.Fatalf("%s: %q does not name the address and the flag", tc.flag, err)
		}
		if took > time.Second {
			t.Fatalf("%s: the start failed after %v", tc.flag, took)
		}
	}
}

// TestEmbeddedNATSFatalFailsFast: a port taken after bind's check (by a
// race) still fails at once: the embedded server's fatal error is caught
// rather than waited out.
func TestEmbeddedNATSFatalFailsFast(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg := Config{NATSListen: taken.Addr().String(), Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	cfg.withDefaults()
	b := &Broker{cfg: cfg, log: cfg.Log}
	began := time.Now()
	err = b.connectNATS(nil, nil) // without bind, as if the port were taken just after it
	if took := time.Since(began); err == nil || took > time.Second {
		if b.nc != nil {
			b.nc.Close()
			b.ns.Shutdown()
		}
		t.Fatalf("got %v after %v, want an error well within a second", err, took)
	}
	if !strings.Contains(err.Error(), taken.Addr().String()) || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("%q does not say the address is taken", err)
	}
}
