package browsertest

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"

	"github.com/seed84792017/cellcast/broker"
	"github.com/seed84792017/cellcast/listdb"
)

// Driving the page: a broker, headless Chromium, what the page asks for
// and what it complains of, and small helpers to run JavaScript, click
// and take screenshots.

var (
	chromiumPath = flag.String("demo.chromium", "", "the browser (default: $CHROMIUM, else chromium on PATH)")
	shots        = flag.String("demo.shots", "", "write screenshots of the demo into this directory")
)

// startBroker runs a broker on loopback ports the OS picks.
func startBroker(t *testing.T) *broker.Broker {
	t.Helper()
	b, err := broker.Start(broker.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", NATSListen: "127.0.0.1:0",
		Durability: listdb.Written, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Shutdown(context.Background()) })
	return b
}

// browser starts headless Chromium with the flags that keep it off the
// network (no background fetches, no component updates, no QUIC).
func browser(t *testing.T) context.Context {
	t.Helper()
	path := *chromiumPath
	if path == "" {
		path = os.Getenv("CHROMIUM")
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path == "" {
			path, _ = exec.LookPath(name)
		}
	}
	if path == "" {
		t.Fatal("no Chromium: apt-get install -y chromium (or give -demo.chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1400, 900),
		chromedp.UserDataDir(t.TempDir()), chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	return ctx
}

// watcher records every URL the page asks for (WebSockets included), the
// HTTP errors it gets, and its console errors and uncaught exceptions.
type watcher struct {
	mu       sync.Mutex
	urls     []string
	failures []string
	errors   []string
}

func (w *watcher) listen(t *testing.T, ctx context.Context) {
	t.Helper()
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	err := chromedp.Listen(ctx, func(ev any) {
		w.mu.Lock()
		defer w.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			w.urls = append(w.urls, e.Request.URL)
		case *network.EventWebSocketCreated:
			w.urls = append(w.urls, e.URL)
		case *network.EventResponseReceived:
			// The browser asks for a favicon on its own; the broker has none.
			if e.Response.Status >= 400 && !strings.HasSuffix(e.Response.URL, "/favicon.ico") {
				w.failures = append(w.failures, fmt.Sprintf("%d %s", e.Response.Status, e.Response.URL))
			}
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			w.errors = append(w.errors, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber+1, msg))
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				w.errors = append(w.errors, "console.error: "+strings.Join(args, " "))
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// elsewhere lists the URLs not on host (data: URLs stay in the page).
func (w *watcher) elsewhere(host string) (bad []string, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, u := range w.urls {
		p, err := url.Parse(u)
		if err != nil || p.Scheme != "data" && p.Host != host {
			bad = append(bad, u)
		}
	}
	return bad, len(w.urls)
}

// asked counts the requests whose URL holds s.
func (w *watcher) asked(s string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, u := range w.urls {
		if strings.Contains(u, s) {
			n++
		}
	}
	return n
}

// check fails the test on HTTP errors and on the page's console errors.
func (w *watcher) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.failures) > 0 || len(w.errors) > 0 {
		t.Fatalf("HTTP errors %q; console errors %q", w.failures, w.errors)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// do runs a statement in the page.
func do(t *testing.T, ctx context.Context, js string) {
	t.Helper()
	eval[chromedp.Void](t, ctx, "void ("+js+")")
}

func poll(t *testing.T, ctx context.Context, js string, timeout time.Duration) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		t.Fatalf("waiting for %s: %v", js, err)
	}
}

// clickMap clicks the map at a point, as a person would.
func clickMap(t *testing.T, ctx context.Context, p latLng) {
	t.Helper()
	xy := eval[[2]float64](t, ctx, fmt.Sprintf(`(() => { const r = demo.map.getContainer().getBoundingClientRect(), p = demo.map.latLngToContainerPoint([%v, %v]); return [r.left + p.x, r.top + p.y]; })()`, p.Lat, p.Lng))
	if err := chromedp.Do(ctx, chromedp.MouseClickXY(xy[0], xy[1])); err != nil {
		t.Fatal(err)
	}
}

func click(t *testing.T, ctx context.Context, selector string) {
	t.Helper()
	xy := eval[[2]float64](t, ctx, fmt.Sprintf(`(() => { const el = document.querySelector(%q); el.scrollIntoView({ block: "center" }); const r = el.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()`, selector))
	if err := chromedp.Do(ctx, chromedp.MouseClickXY(xy[0], xy[1])); err != nil {
		t.Fatal(err)
	}
}

// choose picks an option of a select, as a person would (a change event).
func choose(t *testing.T, ctx context.Context, selector, value string) {
	t.Helper()
	do(t, ctx, fmt.Sprintf(`(() => { const s = document.querySelector(%q); s.value = %q; if (s.value !== %[2]q) throw new Error("no option " + %[2]q); s.dispatchEvent(new Event("change")); })()`, selector, value))
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if *shots == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err == nil {
		err = os.WriteFile(filepath.Join(*shots, name), png, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// openPage loads the demo and waits until the map is drawn and the page's
// WebSocket is open.
func openPage(t *testing.T, b *broker.Broker) (context.Context, *watcher) {
	t.Helper()
	return openPageAt(t, b.HTTPAddr())
}

// openPageAt opens the demo of the broker at addr (host:port).
func openPageAt(t *testing.T, addr string) (context.Context, *watcher) {
	t.Helper()
	ctx := browser(t)
	w := &watcher{}
	w.listen(t, ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+addr+"/")); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, `document.body.dataset.ready === "1" && document.body.dataset.ws === "open"`, 20*time.Second)
	return ctx, w
}

// publish sends one incident from outside the page, over the broker's
// WebSocket as any client would.
func publish(t *testing.T, b *broker.Broker, req map[string]any) map[string]any {
	t.Helper()
	return publishTo(t, b.HTTPAddr(), req)
}

// publishTo publishes to the broker at addr (host:port of its HTTP API).
func publishTo(t *testing.T, addr string, req map[string]any) map[string]any {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	req["id"], req["op"] = "1", "publish"
	if err := ws.WriteJSON(req); err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	if err := ws.ReadJSON(&rep); err != nil || rep["op"] != "published" {
		t.Fatalf("publish: %v %v", rep, err)
	}
	return rep
}
