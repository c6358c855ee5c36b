package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// The JavaScript client's example page, clients/js/examples/alerts.html
// (docs/clients.md): live alerts within 2 km of where the browser is, in
// Chromium with its position granted and set, against a broker that is
// killed and restarted under it.

// brokerProc is cmd/broker, built from this tree, run as a process of its
// own so that it can be killed with SIGKILL and started again on the same
// data directory and addresses.
type brokerProc struct {
	t          *testing.T
	bin, data  string
	http, nats string // host:port
	flags      []string
	cmd        *exec.Cmd
	exited     chan struct{}
	mu         sync.Mutex
	log        bytes.Buffer
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
	buildDir  string
)

// brokerBinary builds cmd/broker once per test run.
func brokerBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "cellcast-browsertest-")
		if buildErr != nil {
			return
		}
		builtBin = filepath.Join(buildDir, "broker")
		gobin := os.Getenv("GO")
		if gobin == "" {
			gobin = "go"
		}
		cmd := exec.Command(gobin, "build", "-o", builtBin, "./cmd/broker")
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/broker: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// freeAddr is a loopback address no one listens on, for now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func startBrokerProc(t *testing.T, flags ...string) *brokerProc {
	t.Helper()
	b := &brokerProc{t: t, bin: brokerBinary(t), data: t.TempDir(), http: freeAddr(t), nats: freeAddr(t), flags: flags}
	t.Cleanup(b.kill)
	b.start()
	return b
}

// start runs the broker and waits until /readyz says it is ready.
func (b *brokerProc) start() {
	b.t.Helper()
	args := append([]string{"--data", b.data, "--http", b.http, "--nats-listen", b.nats, "--durability", "os", "--log-level", "warn"}, b.flags...)
	b.cmd = exec.Command(b.bin, args...)
	b.cmd.Stdout, b.cmd.Stderr = b, b
	if err := b.cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	exited := make(chan struct{})
	b.exited = exited
	go func() { b.cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case <-exited:
			b.t.Fatalf("the broker exited: %s\n%s", b.cmd.ProcessState, b.output())
		default:
		}
		if r, err := http.Get("http://" + b.http + "/readyz"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("the broker is not ready after 20 s:\n%s", b.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill ends the broker with SIGKILL and waits until it is gone.
func (b *brokerProc) kill() {
	if b.cmd == nil || b.cmd.Process == nil {
		return
	}
	b.cmd.Process.Kill()
	<-b.exited
	b.cmd = nil
}

func (b *brokerProc) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.log.Write(p)
}

func (b *brokerProc) output() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.log.String()
}

// alertsListed is the page's list, top (newest) first.
func alertsListed(t *testing.T, ctx context.Context) []string {
	t.Helper()
	return eval[[]string](t, ctx, `[...document.querySelectorAll("#alerts li")].map((li) => li.textContent)`)
}

// TestAlertsExampleInChromium: the example page, served beside the
// client (it imports ../src/cellcast.js) by a file server of its own
// origin, which the broker allows, at a position Chromium is told to
// report. An alert 500 m away shows and one 5 km away does not; the
// broker is killed (SIGKILL) and started again on its data directory and
// address; an alert published then shows too, and the first is not
// shown again.
func TestAlertsExampleInChromium(t *testing.T) {
	files := httptest.NewServer(http.FileServer(http.Dir("../../clients/js")))
	t.Cleanup(files.Close)
	b := startBrokerProc(t, "--allowed-origins", files.URL)

	ctx := browser(t)
	w := &watcher{}
	w.listen(t, ctx)
	here := latLng{40.758, -73.9855} // Times Square
	accuracy := 10.0
	if _, err := chromedp.CallBrowser(ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
		Permission: &cdpbrowser.PermissionDescriptor{Name: "geolocation"}, Setting: cdpbrowser.PermissionSettingGranted, Origin: files.URL}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, emulation.SetGeolocationOverride, emulation.SetGeolocationOverrideParams{Latitude: &here.Lat, Longitude: &here.Lng, Accuracy: &accuracy}); err != nil {
		t.Fatal(err)
	}
	page := files.URL + "/examples/alerts.html?broker=" + url.QueryEscape("ws://"+b.http+"/ws")
	if err := chromedp.Do(ctx, chromedp.Navigate(page)); err != nil {
		t.Fatal(err)
	}
	status := `document.querySelector("#status").textContent`
	poll(t, ctx, status+` === "Alerts within 2 km of 40.7580, -73.9855"`, 20*time.Second)

	alert := func(deg, m, radius float64, desc string) {
		p := destination(here, deg, m)
		publishTo(t, b.http, map[string]any{"uid": "outsider", "lat": p.Lat, "lng": p.Lng, "radius_m": radius, "expires": "10m", "desc": desc, "attrs": map[string]string{"category": "alert"}})
	}
	shows := func(desc string, timeout time.Duration) {
		t.Helper()
		poll(t, ctx, fmt.Sprintf(`[...document.querySelectorAll("#alerts li")].some((li) => li.textContent.endsWith(" " + %q))`, desc), timeout)
	}
	alert(90, 5000, 300, "Far: Long Island City")
	alert(0, 500, 100, "Water main break")
	shows("Water main break", 5*time.Second)

	// Killed: the page says it is reconnecting.
	b.kill()
	poll(t, ctx, status+` === "Reconnecting…"`, 10*time.Second)
	time.Sleep(500 * time.Millisecond) // a dial or two refused meanwhile
	// Back on the same data directory and address. The alert is published
	// at once, likely before the page is back: its subscription's resume
	// replays it, else it comes live.
	b.start()
	alert(180, 800, 200, "Gas leak")
	shows("Gas leak", 20*time.Second)
	poll(t, ctx, status+` === "Back: resuming what was missed"`, 5*time.Second)

	got := alertsListed(t, ctx)
	if len(got) != 2 || !strings.HasSuffix(got[0], " Gas leak") || !strings.HasSuffix(got[1], " Water main break") {
		t.Errorf("the page lists %q, want the gas leak over the water main break, each once, and not the far one", got)
	}
	// Nothing came from elsewhere than the file server and the broker.
	w.mu.Lock()
	urls := w.urls
	w.mu.Unlock()
	for _, u := range urls {
		p, err := url.Parse(u)
		if err != nil || p.Host != strings.TrimPrefix(files.URL, "http://") && p.Host != b.http {
			t.Errorf("the page asked for %s", u)
		}
	}
	w.check(t)
}

// TestDemoSurvivesRestart: the demo page runs on the JS client, which
// reconnects and resumes. "Me" at Times Square lists an alert; the broker
// is killed (SIGKILL) and started again on its data directory and
// address; the page says it is reconnecting, then is back, and an alert
// published then reaches "My alerts" and the map's watch, the first one
// not listed twice.
func TestDemoSurvivesRestart(t *testing.T) {
	b := startBrokerProc(t)
	ctx, w := openPageAt(t, b.http)
	do(t, ctx, `demo.setRate(0), demo.setUsers(10), demo.map.setView([40.758, -73.9855], 14, { animate: false })`)
	do(t, ctx, `demo.setMe(40.758, -73.9855)`)
	poll(t, ctx, `demo.me.moves === 1`, 5*time.Second)
	pub := func(deg, m float64, desc string) string {
		p := destination(timesSquare, deg, m)
		rep := publishTo(t, b.http, map[string]any{"uid": "outsider", "lat": p.Lat, "lng": p.Lng, "radius_m": 100.0, "expires": "2m", "desc": desc, "attrs": map[string]string{"category": "accident"}})
		return rep["pid"].(string)
	}
	first := pub(0, 500, "before the restart")
	poll(t, ctx, listed(first)+` === 1`, 2*time.Second)

	b.kill()
	poll(t, ctx, `document.body.dataset.ws === "reconnecting" && document.querySelector("#status").textContent.startsWith("reconnecting")`, 10*time.Second)
	time.Sleep(500 * time.Millisecond)
	b.start()
	second := pub(180, 500, "after the restart")
	poll(t, ctx, `document.body.dataset.ws === "open"`, 20*time.Second)
	poll(t, ctx, listed(second)+` === 1 && demo.incidents.byPid.has(`+fmt.Sprintf("%q", second)+`)`, 10*time.Second)
	if n := eval[int](t, ctx, listed(first)); n != 1 {
		t.Errorf("the alert from before the restart is listed %d times", n)
	}
	if n := eval[int](t, ctx, `demo.panel.repeats`); n != 0 {
		t.Errorf("%d repeats from the broker", n)
	}
	// The page publishes again.
	do(t, ctx, `demo.publishAt(40.75, -73.99).then((r) => (demo.published = r))`)
	poll(t, ctx, `demo.published?.pid && demo.incidents.byPid.has(demo.published.pid)`, 5*time.Second)
	w.check(t)
}
