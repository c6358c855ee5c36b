package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/internal/buildinfo"
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

// TestBuildInfoLoggedAndExported: the start logs the version and the
// revision, and /metrics, over HTTP, has cellcast_build_info with them.
func TestBuildInfoLoggedAndExported(t *testing.T) {
	var logged syncBuffer
	b := start(t, Config{Log: slog.New(slog.NewJSONHandler(&logged, nil))})
	in := buildinfo.Read()
	found := false
	for _, l := range strings.Split(strings.TrimSpace(logged.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		if m["msg"] == "starting broker" {
			found = m["version"] == in.Version && m["revision"] == in.Revision
		}
	}
	if !found {
		t.Fatalf("no start line with version %q and revision %q:\n%s", in.Version, in.Revision, logged.String())
	}
	resp, err := http.Get("http://" + b.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := fmt.Sprintf(`cellcast_build_info{go=%q,revision=%q,version=%q} 1`, in.GoVersion, in.Revision, in.Version)
	if !strings.Contains(string(body), "\n"+want+"\n") {
		t.Fatalf("/metrics has no %s:\n%s", want, grepLines(string(body), "build_info"))
	}
}

// TestStartLogsTheDemoURL: "broker ready" says where the demo page is,
// and the page is there.
func TestStartLogsTheDemoURL(t *testing.T) {
	var logged syncBuffer
	b := start(t, Config{Log: slog.New(slog.NewTextHandler(&logged, nil))})
	url := "http://" + b.HTTPAddr() + "/"
	if !strings.Contains(logged.String(), "demo="+url+" ") {
		t.Fatalf("the log does not say demo=%s:\n%s", url, logged.String())
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("%s: %s, %s", url, resp.Status, resp.Header.Get("Content-Type"))
	}
	// On every interface, a browser here reaches it as localhost; under
	// TLS, with https.
	for addr, want := range map[string]string{"0.0.0.0:8080": "http://localhost:8080/", "[::]:8080": "http://localhost:8080/", "[::1]:8443": "https://[::1]:8443/"} {
		ta, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		b := &Broker{ln: addrListener{ta}}
		if got := b.demoURL(strings.HasPrefix(want, "https")); got != want {
			t.Errorf("%s: %s, want %s", addr, got, want)
		}
	}
}

// addrListener is a listener that only has an address.
type addrListener struct{ addr net.Addr }

func (l addrListener) Addr() net.Addr          { return l.addr }
func (addrListener) Accept() (net.Conn, error) { return nil, net.ErrClosed }
func (addrListener) Close() error              { return nil }
