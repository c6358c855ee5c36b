package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/auth"
	"github.com/seed84792017/cellcast/broker"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// syncBuffer is written by a command running in another goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Stamps, ids and clock times differ from run to run.
var volatile = []struct {
	re  *regexp.Regexp
	out string
}{
	{regexp.MustCompile(`\b[0-9a-z]{11,13}-t?[0-9.]+\b`), "<id>"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT[0-9:.]+Z`), "<stamp>"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}`), "<time>"},
	{regexp.MustCompile(`\b\d\d:\d\d:\d\d\b`), "<clock>"},
	{regexp.MustCompile(`"seq":\d+`), `"seq":<seq>`},
	{regexp.MustCompile(`\bseq \d+`), `seq <seq>`},
	{regexp.MustCompile(`127\.0\.0\.1:\d{5}\b`), "127.0.0.1:<port>"}, // ephemeral ports, not 8080
}

func normalize(s string) string {
	for _, v := range volatile {
		s = v.re.ReplaceAllString(s, v.out)
	}
	return s
}

type session struct {
	t    *testing.T
	env  env
	vars map[string]string // the environment; env.lookup reads it
	out  strings.Builder   // the transcript
}

func newSession(t *testing.T) *session {
	b := runBroker(t, broker.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0"})
	t.Cleanup(func() { b.Shutdown(context.Background()) })
	return sessionWith(t, map[string]string{"CELLCAST_SERVER": "ws://" + b.HTTPAddr() + "/ws"})
}

func runBroker(t *testing.T, cfg broker.Config) *broker.Broker {
	t.Helper()
	if cfg.NATSListen == "" {
		cfg.NATSListen = "127.0.0.1:0"
	}
	cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := broker.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sessionWith is a session whose commands see vars as their environment.
func sessionWith(t *testing.T, vars map[string]string) *session {
	s := &session{t: t, vars: vars}
	s.env = env{
		lookup: func(k string) (string, bool) { v, ok := s.vars[k]; return v, ok },
		user:   func() string { return "tester" },
	}
	return s
}

// runEnv runs a command with more variables, shown before it.
func (s *session) runEnv(vars map[string]string, args ...string) {
	old := maps.Clone(s.vars)
	maps.Copy(s.vars, vars)
	defer func() { s.vars = old }()
	var shown []string
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		shown = append(shown, k+"="+vars[k])
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, s.env, &stdout, &stderr)
	s.recordAs(strings.Join(shown, " ")+" ", args, stdout.String(), stderr.String(), code)
}

func (s *session) record(args []string, stdout, stderr string, code int) {
	s.recordAs("", args, stdout, stderr, code)
}

// recordAs records a command run with the variables shown in prefix.
func (s *session) recordAs(prefix string, args []string, stdout, stderr string, code int) {
	shown := make([]string, len(args))
	for i, a := range args {
		shown[i] = a
		if strings.Contains(a, " ") && !strings.HasPrefix(a, "#") && !strings.HasPrefix(a, "<") {
			shown[i] = "'" + a + "'"
		}
	}
	fmt.Fprintf(&s.out, "$ %scellcast %s\n%s", prefix, strings.Join(shown, " "), stdout)
	for _, l := range strings.SplitAfter(stderr, "\n") {
		if l != "" {
			fmt.Fprintf(&s.out, "stderr: %s", l)
		}
	}
	fmt.Fprintf(&s.out, "exit %d\n\n", code)
}

// run runs a command to its end and records it.
func (s *session) run(args ...string) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, s.env, &stdout, &stderr)
	s.record(args, stdout.String(), stderr.String(), code)
}

// runIn runs a command with a file (or "": nothing) as its stdin.
func (s *session) runIn(file string, args ...string) {
	s.t.Helper()
	in := []byte{}
	if file != "" {
		var err error
		if in, err = os.ReadFile(file); err != nil {
			s.t.Fatal(err)
		}
	}
	e := s.env
	e.stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, e, &stdout, &stderr)
	shown := "< /dev/null"
	if file != "" {
		shown = "< " + file
	}
	s.record(append(args, shown), stdout.String(), stderr.String(), code)
}

// background starts a command; stop interrupts it once its stdout holds
// lines lines, and records it.
func (s *session) background(args ...string) (stop func(lines int)) {
	return s.start(args...).stop
}

// job is a command running in the background.
type job struct {
	s              *session
	args           []string
	stdout, stderr syncBuffer
	cancel         func()
	done           chan int
}

// start starts a command and waits until it has subscribed.
func (s *session) start(args ...string) *job {
	ctx, cancel := context.WithCancel(context.Background())
	j := &job{s: s, args: args, cancel: cancel, done: make(chan int)}
	go func() { j.done <- run(ctx, args, s.env, &j.stdout, &j.stderr) }()
	j.wait("subscribed", 10*time.Second)
	return j
}

// wait waits until the job's output holds text.
func (j *job) wait(text string, within time.Duration) {
	j.s.t.Helper()
	for deadline := time.Now().Add(within); !strings.Contains(j.stderr.String()+j.stdout.String(), text); {
		if time.Now().After(deadline) {
			j.s.t.Fatalf("%v: no %q within %v: %s%s", j.args, text, within, j.stdout.String(), j.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop interrupts the job once its stdout holds lines lines, and records
// it.
func (j *job) stop(lines int) {
	j.s.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); strings.Count(j.stdout.String(), "\n") < lines; {
		if time.Now().After(deadline) {
			j.s.t.Fatalf("%v: %d lines, want %d:\n%s", j.args, strings.Count(j.stdout.String(), "\n"), lines, j.stdout.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	j.cancel()
	code := <-j.done
	j.s.record(append(j.args, "# then ^C"), j.stdout.String(), j.stderr.String(), code)
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./cmd/cellcast -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test ./cmd/cellcast -update rewrites it):\n%s", path, got)
	}
}

func TestSubPubQueryGolden(t *testing.T) {
	s := newSession(t)
	s.run("pub", "--cell", "1.2.3", "--expires", "1m", "--desc", "early bird", "--attr", "category=golden", "--attr", "level=2")
	s.run("pub", "--topic", "sports/soccer", "--expires", "1m", "--desc", "kick-off", "--attr", "category=golden")
	stop := s.background("sub", "--cell", "1.2", "--past", "1m", "--future", "1m")
	stopJSON := s.background("sub", "--cell", "1.2.3.4", "--past", "1m", "--future", "1m", "--json", "--uid", "other")
	s.run("pub", "--cell", "1.2", "--desc", "live one", "--uid", "bob")
	s.run("pub", "--cell", "1.2.3.4.1", "--expires", "30s", "--desc", "live two", "--json")
	stop(3)
	stopJSON(4)
	s.run("query", "--attr", "category", "--eq", "golden")
	s.run("query", "--attr", "uid", "--eq", "tester", "--k", "2", "--json")
	s.run("sub", "--topic", "sports", "--past", "1m", "--future", "0")
	s.run("sub", "--cell", "1.2", "--future", "1s", "--json")
	s.run("sub", "--future", "1s")
	// A circle upstate on the cells of its cover, at most four: a
	// publication at New York's face reaches it, and one over several of
	// its cells reaches it once.
	stopCover := s.background("sub", "--lat", "42.755", "--lng", "-75.81", "--radius", "300", "--cover", "4", "--future", "1m", "--uid", "carol")
	s.run("pub", "--cell", "5", "--desc", "all of face 4")
	s.run("pub", "--lat", "42.755", "--lng", "-75.81", "--radius", "100", "--cover", "4", "--desc", "close by", "--json")
	stopCover(2)
	s.run("pub", "--cell", "1.2", "--cover", "2", "--desc", "bad")
	s.run("pub", "--lat", "42.755", "--lng", "-75.81", "--radius", "100", "--cover", "17", "--desc", "bad")
	s.run("pub", "--cell", "1.x", "--desc", "bad")
	s.run("query", "--attr", "nope", "--eq", "x")
	s.run("query")
	s.run("query", "--attr", "category")
	s.run("pub", "--lat", "40.7")
	golden(t, "session.golden", normalize(s.out.String()))
}

// TestPlacesGolden: polygons from files (a geometry, a Feature, a
// FeatureCollection of one, stdin) published and subscribed, queries by
// place, and what each refuses.
func TestPlacesGolden(t *testing.T) {
	s := newSession(t)
	s.run("pub", "--polygon", "testdata/midtown.geojson", "--desc", "midtown closed", "--attr", "category=works")
	// Times Square, inside midtown; Brooklyn, outside it; central Paris.
	stopIn := s.background("sub", "--lat", "40.758", "--lng", "-73.9855", "--radius", "200", "--past", "1m", "--future", "1m", "--uid", "alice")
	stopOut := s.background("sub", "--lat", "40.6782", "--lng", "-73.9442", "--radius", "500", "--future", "1m", "--uid", "bob", "--json")
	stopParis := s.background("sub", "--polygon", "testdata/paris-feature.geojson", "--cover", "4", "--future", "1m", "--uid", "carol", "--json")
	s.runIn("testdata/collection.geojson", "pub", "--polygon", "-", "--cover", "6", "--desc", "New York and Paris")
	s.run("pub", "--polygon", "testdata/midtown.geojson", "--desc", "midtown still closed")
	s.run("pub", "--lat", "48.8606", "--lng", "2.3376", "--desc", "at the Louvre", "--attr", "category=traffic")
	s.run("pub", "--lat", "40.6782", "--lng", "-73.9442", "--radius", "50", "--desc", "in Brooklyn", "--attr", "category=traffic", "--json")
	stopIn(3)
	stopOut(3)
	stopParis(3)
	s.run("query", "--near", "40.758,-73.9855,1000")
	s.run("query", "--near", "40.758,-73.9855,1000", "--attr", "category", "--eq", "works")
	s.run("query", "--near", "48.8606,2.3376", "--k", "1")
	s.run("query", "--within", "testdata/paris-feature.geojson", "--json")
	s.runIn("testdata/midtown.geojson", "query", "--within", "-", "--cover", "2", "--attr", "uid", "--eq", "tester", "--filter", "MIDTOWN")
	s.run("query", "--near", "40.6782,-73.9442,100", "--from", "2000-01-01T00:00:00+00:00")
	s.run("query", "--near", "40.6782,-73.9442,100", "--from", "2000-01-01T00:00:00+00:00", "--to", "2001-01-01T00:00:00+00:00")
	// Refused here, with exit 2, or by the broker, with exit 1.
	s.run("query", "--near", "40.7,x")
	s.run("query", "--near", "40.758,-73.9855,0")
	s.run("query", "--near", "40.758,-73.9855", "--cover", "4")
	s.run("query", "--near", "40.758,-73.9855,100", "--within", "testdata/midtown.geojson")
	s.run("query", "--near", "40.758,-73.9855,100", "--from", "yesterday")
	s.run("query", "--near", "40.758,-73.9855,100", "--attr", "category")
	s.run("query", "--within", "testdata/open-ring.geojson")
	s.run("pub", "--polygon", "testdata/open-ring.geojson")
	s.run("pub", "--polygon", "testdata/two-features.geojson")
	s.run("pub", "--polygon", "testdata/point.geojson")
	s.run("pub", "--polygon", "testdata/missing.geojson")
	s.run("pub", "--polygon", "testdata/midtown.geojson", "--cover", "17")
	s.run("sub", "--polygon", "testdata/midtown.geojson", "--cell", "5")
	s.runIn("", "pub", "--polygon", "-")
	golden(t, "places.golden", normalize(s.out.String()))
}

// The same commands over NATS.
func TestOverNATS(t *testing.T) {
	b := runBroker(t, broker.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0"})
	defer b.Shutdown(context.Background())
	s := sessionWith(t, map[string]string{"CELLCAST_SERVER": b.NATSURL()})
	stop := s.background("sub", "--cell", "8", "--future", "1m")
	s.run("pub", "--cell", "8.1", "--desc", "over nats")
	stop(1)
	s.run("query", "--attr", "uid", "--eq", "tester")
	golden(t, "nats.golden", normalize(s.out.String()))
}

func TestToken(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("k", 40)), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	e := env{lookup: func(k string) (string, bool) {
		if k == "CELLCAST_AUTH_HMAC_SECRET_FILE" {
			return secret, true
		}
		return "", false
	}}
	if code := run(context.Background(), []string{"token", "--uid", "alice"}, e, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	h, _ := auth.LoadHMAC(secret)
	if id, err := h.Verify(strings.TrimSpace(stdout.String())); err != nil || id.UID != "alice" {
		t.Fatalf("token %q: uid %q, %v", stdout.String(), id.UID, err)
	}
	if code := run(context.Background(), []string{"token"}, e, &stdout, &stderr); code != 2 {
		t.Fatalf("token without --uid: exit %d", code)
	}
}
