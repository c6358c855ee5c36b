package browsertest

import (
	"context"
	"encoding/json"
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
	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"

	"github.com/seed84792017/cellcast/broker"
	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/listdb"
)

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

// requests records every URL the page asks for, WebSockets included.
type requests struct {
	mu   sync.Mutex
	urls []string
}

func (r *requests) listen(t *testing.T, ctx context.Context) {
	t.Helper()
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	err := chromedp.Listen(ctx, func(ev any) {
		r.mu.Lock()
		defer r.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			r.urls = append(r.urls, e.Request.URL)
		case *network.EventWebSocketCreated:
			r.urls = append(r.urls, e.URL)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// elsewhere lists the URLs not on host (data: URLs stay in the page).
func (r *requests) elsewhere(host string) (bad []string, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, u := range r.urls {
		p, err := url.Parse(u)
		if err != nil || p.Scheme != "data" && p.Host != host {
			bad = append(bad, u)
		}
	}
	return bad, len(r.urls)
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
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
func clickMap(t *testing.T, ctx context.Context, lat, lng float64) {
	t.Helper()
	xy := eval[[2]float64](t, ctx, fmt.Sprintf(`(() => { const r = demo.map.getContainer().getBoundingClientRect(), p = demo.map.latLngToContainerPoint([%v, %v]); return [r.left + p.x, r.top + p.y]; })()`, lat, lng))
	if err := chromedp.Do(ctx, chromedp.MouseClickXY(xy[0], xy[1])); err != nil {
		t.Fatal(err)
	}
}

func click(t *testing.T, ctx context.Context, selector string) {
	t.Helper()
	xy := eval[[2]float64](t, ctx, fmt.Sprintf(`(() => { const r = document.querySelector(%q).getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()`, selector))
	if err := chromedp.Do(ctx, chromedp.MouseClickXY(xy[0], xy[1])); err != nil {
		t.Fatal(err)
	}
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
func openPage(t *testing.T, b *broker.Broker) (context.Context, *requests) {
	t.Helper()
	ctx := browser(t)
	reqs := &requests{}
	reqs.listen(t, ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+b.HTTPAddr()+"/")); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, `document.body.dataset.ready === "1" && document.body.dataset.ws === "open"`, 20*time.Second)
	return ctx, reqs
}

type me struct {
	Sid   string  `json:"sid"`
	Cell  string  `json:"cell"`
	Lat   float64 `json:"lat"`
	Lng   float64 `json:"lng"`
	Moves int     `json:"moves"`
}

// neighbour finds a point one cell or more east of cell whose circle of
// radius r maps to a cell that does not overlap it, and the radius of an
// incident at from whose cell overlaps both.
func neighbour(t *testing.T, tree *dewey.QuadTree, cell string, from [2]float64, r float64) (to [2]float64, next dewey.ID, incidentR float64) {
	t.Helper()
	c1, err := dewey.Parse(cell)
	if err != nil {
		t.Fatal(err)
	}
	box, err := tree.CellBox(c1)
	if err != nil {
		t.Fatal(err)
	}
	for k := 1.0; k < 8; k++ {
		to = [2]float64{from[0], from[1] + k*(box.MaxLng-box.MinLng)}
		if next, err = tree.CircleCell(to[0], to[1], r); err != nil || dewey.Overlaps(c1, next) {
			continue
		}
		for incidentR = 500; incidentR < 100_000; incidentR *= 1.5 {
			if ic, err := tree.CircleCell(from[0], from[1], incidentR); err == nil && dewey.Overlaps(ic, c1) && dewey.Overlaps(ic, next) {
				return to, next, incidentR
			}
		}
	}
	t.Fatalf("no neighbour of %s", cell)
	return
}

// publish sends one incident from outside the page, over the broker's
// WebSocket as any client would.
func publish(t *testing.T, b *broker.Broker, req map[string]any) map[string]any {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+b.HTTPAddr()+"/ws", nil)
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

// TestDemoInChromium: the page loads from the broker alone, draws the map
// and connects; "I am here" on New York City subscribes; an incident
// published from outside shows in the alert panel within 2 s; moving to a
// neighbouring cell lists it no second time; it disappears at expiry.
func TestDemoInChromium(t *testing.T) {
	b := startBroker(t)
	ctx, reqs := openPage(t, b)

	if n := eval[int](t, ctx, `document.querySelectorAll("path.county").length`); n < 60 {
		t.Fatalf("%d county outlines drawn, want New York's 62", n)
	}
	painted := `(() => { const c = document.querySelector("canvas.overlay"), d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data; let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; })()`
	if n := eval[int](t, ctx, painted); n < 1000 {
		t.Fatalf("the grid and place names painted %d pixels", n)
	}
	// Quiet the simulation, so that the alerts are the test's own.
	do(t, ctx, `demo.setRate(0), demo.setUsers(10), demo.map.setView([40.758, -73.9855], 15), document.querySelector("#me-radius").value = "250"`)

	click(t, ctx, `button[data-mode="me"]`)
	clickMap(t, ctx, 40.758, -73.9855)
	poll(t, ctx, `demo.me.moves === 1`, 5*time.Second)
	m1 := eval[me](t, ctx, `demo.me`)
	tree, err := dewey.NewQuadTree(dewey.NewYorkState, dewey.MaxGeoDepth)
	if err != nil {
		t.Fatal(err)
	}
	to, next, radius := neighbour(t, tree, m1.Cell, [2]float64{m1.Lat, m1.Lng}, 250)

	desc := fmt.Sprintf("water main break %d", time.Now().UnixNano()%1e6)
	sent := time.Now()
	rep := publish(t, b, map[string]any{"uid": "outsider", "lat": m1.Lat, "lng": m1.Lng, "radius_m": radius, "expires": "8s", "desc": desc, "attrs": map[string]string{"category": "flood"}})
	pid := rep["pid"].(string)
	listed := fmt.Sprintf(`[...document.querySelectorAll("#alerts li")].filter(li => li.dataset.pid === %q && li.textContent.includes(%q)).length`, pid, desc)
	poll(t, ctx, listed+` === 1`, 2*time.Second)
	t.Logf("alert shown %v after the publish", time.Since(sent).Round(time.Millisecond))
	poll(t, ctx, fmt.Sprintf(`demo.incidents.byPid.has(%q)`, pid), 2*time.Second)

	do(t, ctx, fmt.Sprintf(`demo.map.setView([%v, %v], 15)`, to[0], to[1]))
	clickMap(t, ctx, to[0], to[1])
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](`demo.me.moves === 2`, chromedp.WithPollingTimeout(5*time.Second))); err != nil {
		t.Fatalf("moving me to %v (cell %s): %v; the page says %q", to, next, err, eval[string](t, ctx, `document.querySelector("#me-msg").textContent`))
	}
	m2 := eval[me](t, ctx, `demo.me`)
	if m2.Cell != next.String() || m2.Sid == m1.Sid {
		t.Fatalf("after the move: %+v, want cell %s", m2, next)
	}
	time.Sleep(500 * time.Millisecond) // room for a duplicate to arrive
	if n := eval[int](t, ctx, listed); n != 1 {
		t.Fatalf("the incident is listed %d times after moving from %s to %s", n, m1.Cell, m2.Cell)
	}
	// The two cells do not overlap; the broker's self-join must still
	// leave out what the earlier subscription got at their common
	// ancestor, so the page has nothing to drop (docs/demo.md).
	if n := eval[int](t, ctx, `demo.panel.repeats`); n != 0 {
		t.Fatalf("the broker sent the incident again after the move: the page dropped %d repeats", n)
	}

	expires, err := time.Parse(time.RFC3339Nano, rep["expires_at"].(string))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(expires))
	gone := fmt.Sprintf(`!demo.incidents.byPid.has(%q) && !document.querySelector('#alerts li[data-pid=%q]')`, pid, pid)
	poll(t, ctx, gone, 2500*time.Millisecond)

	if bad, n := reqs.elsewhere(b.HTTPAddr()); len(bad) > 0 || n < 5 {
		t.Fatalf("of %d requests, these left the broker's host: %v", n, bad)
	}
	if *shots != "" {
		demoShot(t, ctx, m2)
	}
}

// demoShot takes the README's picture: New York City with moving users,
// incidents and the viewer's alerts.
func demoShot(t *testing.T, ctx context.Context, m me) {
	do(t, ctx, `demo.map.setView([40.74, -73.95], 11), demo.setUsers(1000), demo.setRate(10), document.querySelector("#me-radius").value = "3000"`)
	clickMap(t, ctx, 40.74, -73.99)
	time.Sleep(8 * time.Second)
	screenshot(t, ctx, "demo.png")
	do(t, ctx, `document.querySelector("#q-eq").value = "fire", document.querySelector("#query button").click()`)
	time.Sleep(1500 * time.Millisecond)
	do(t, ctx, `document.querySelector("aside").scrollTop = 1e6`)
	screenshot(t, ctx, "demo-charts.png")
	b, _ := json.Marshal(m)
	t.Logf("screenshots written; me was %s", b)
}

// TestNoTokenAsksForOne: under auth, the page asks for a token instead of
// failing; the right one connects it.
func TestNoTokenAsksForOne(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("demo-token-0123456789 alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := broker.Start(broker.Config{DataDir: dir, HTTPAddr: "127.0.0.1:0", NATSListen: "127.0.0.1:0", TokensFile: tokens,
		Durability: listdb.Written, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Shutdown(context.Background())
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+b.HTTPAddr()+"/")); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, `!document.querySelector("#auth").hidden`, 10*time.Second)
	do(t, ctx, `document.querySelector("#token").value = "demo-token-0123456789"`)
	click(t, ctx, `#auth button`)
	poll(t, ctx, `document.body.dataset.ready === "1" && document.body.dataset.ws === "open"`, 10*time.Second)
	if s := eval[string](t, ctx, `document.querySelector("#status").textContent`); strings.HasPrefix(s, "error") {
		t.Fatal(s)
	}
}
