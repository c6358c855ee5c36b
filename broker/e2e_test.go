package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	cellcast "github.com/seed84792017/cellcast/client"
	"github.com/seed84792017/cellcast/gateway"
	"github.com/seed84792017/cellcast/geo"
	"github.com/seed84792017/cellcast/lsm/vfs"
	"github.com/seed84792017/cellcast/subscriptions"
)

// start runs a broker on loopback ports chosen by the OS.
func start(t *testing.T, cfg Config) *Broker {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	cfg.HTTPAddr = "127.0.0.1:0"
	if cfg.NATSListen == "" {
		cfg.NATSListen = "127.0.0.1:0"
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	b, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if b.ready.Load() {
			b.Shutdown(context.Background())
		}
	})
	return b
}

type msg = map[string]any

// client is a WebSocket client that sorts what arrives into replies (by
// id) and notifications.
type client struct {
	t     *testing.T
	ws    *websocket.Conn
	in    chan msg
	notes []msg
	ended []msg // "ended" frames, which come when windows end
	err   error // why the reader stopped
	done  chan struct{}
	ids   int
}

func dial(t *testing.T, b *Broker, header http.Header) *client {
	t.Helper()
	c, err := dialErr(b, header)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.ws.Close() })
	c.t = t
	return c
}

func websocketDial(url string) (*websocket.Conn, *http.Response, error) {
	return websocket.DefaultDialer.Dial(url, nil)
}

func dialErr(b *Broker, header http.Header) (*client, error) {
	ws, resp, err := websocket.DefaultDialer.Dial("ws://"+b.HTTPAddr()+"/ws", header)
	if err != nil {
		if resp != nil {
			body, _ := io.ReadAll(resp.Body)
			return nil, fmt.Errorf("%w: %d %s", err, resp.StatusCode, body)
		}
		return nil, err
	}
	return wrap(ws), nil
}

// wrap starts the reader of a dialled connection.
func wrap(ws *websocket.Conn) *client {
	c := &client{ws: ws, in: make(chan msg, 1<<16), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		defer close(c.in)
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				c.err = err
				return
			}
			var m msg
			if err := json.Unmarshal(data, &m); err != nil {
				c.err = fmt.Errorf("frame %q: %w", data, err)
				return
			}
			c.in <- m
		}
	}()
	return c
}

func (c *client) send(m msg) string {
	c.t.Helper()
	if _, ok := m["id"]; !ok {
		c.ids++
		m["id"] = fmt.Sprint("r", c.ids)
	}
	if err := c.ws.WriteJSON(m); err != nil {
		c.t.Fatal(err)
	}
	return m["id"].(string)
}

// next returns the next frame, failing after a while.
func (c *client) next() msg {
	c.t.Helper()
	select {
	case m, ok := <-c.in:
		if !ok {
			c.t.Fatalf("connection ended: %v", c.err)
		}
		return m
	case <-time.After(10 * time.Second):
		c.t.Fatal("no frame within 10 s")
	}
	return nil
}

// do sends a request and returns its reply, keeping notifications that
// come first.
func (c *client) do(m msg) msg {
	c.t.Helper()
	id := c.send(m)
	for {
		f := c.next()
		if f["op"] == "notification" {
			c.notes = append(c.notes, f)
			continue
		}
		if f["op"] == "ended" {
			c.ended = append(c.ended, f)
			continue
		}
		if f["id"] != id {
			c.t.Fatalf("reply %v to another request than %s", f, id)
		}
		return f
	}
}

// wait collects notifications until there are n.
func (c *client) wait(n int) []msg {
	c.t.Helper()
	for len(c.notes) < n {
		f := c.next()
		if f["op"] == "ended" {
			c.ended = append(c.ended, f)
			continue
		}
		if f["op"] != "notification" {
			c.t.Fatalf("unexpected frame %v", f)
		}
		c.notes = append(c.notes, f)
	}
	return c.notes
}

// quiet checks nothing more arrives for a moment ("ended" frames
// aside).
func (c *client) quiet() {
	c.t.Helper()
	for {
		select {
		case f, ok := <-c.in:
			if ok && f["op"] == "ended" {
				c.ended = append(c.ended, f)
				continue
			}
			if ok {
				c.t.Fatalf("unexpected frame %v", f)
			}
		case <-time.After(150 * time.Millisecond):
		}
		return
	}
}

func wantOp(t *testing.T, m msg, op string) {
	t.Helper()
	if m["op"] != op {
		t.Fatalf("got %v, want op %q", m, op)
	}
}

func pidsOf(ms []msg) []string {
	var out []string
	for _, m := range ms {
		if p, ok := m["publication"].(msg); ok {
			out = append(out, p["pid"].(string))
		} else {
			out = append(out, m["pid"].(string))
		}
	}
	return out
}

func results(m msg) []msg {
	var out []msg
	for _, r := range m["results"].([]any) {
		out = append(out, r.(msg))
	}
	return out
}

// TestSubscribePublishNotifyAcrossDepthsAndTopics checks matching end to
// end through the Go client; the tests after it check the wire format.
func TestSubscribePublishNotifyAcrossDepthsAndTopics(t *testing.T) {
	b := start(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := "ws://" + b.HTTPAddr() + "/ws"
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	sub, err := cellcast.Dial(ctx, url, cellcast.Options{UID: "alice", Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	pub, err := cellcast.Dial(ctx, url, cellcast.Options{UID: "p", Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	publish := func(where cellcast.Location, desc string) *cellcast.Published {
		t.Helper()
		p, err := pub.Publish(ctx, cellcast.PublishRequest{Location: where, Expires: time.Minute, Desc: desc})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Every notification, of whichever subscription, in arrival order.
	var mu sync.Mutex
	var got []cellcast.Notification
	arrived := make(chan struct{}, 100)
	record := func(n cellcast.Notification) {
		mu.Lock()
		got = append(got, n)
		mu.Unlock()
		arrived <- struct{}{}
	}
	subscribe := func(r cellcast.SubscribeRequest) *cellcast.Subscription {
		t.Helper()
		r.Future, r.Handler, r.Inline = time.Minute, record, true
		s, err := sub.Subscribe(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	wait := func(n int) map[string][]string {
		t.Helper()
		for range n {
			select {
			case <-arrived:
			case <-ctx.Done():
				t.Fatalf("%d notifications, want %d", len(got), n)
			}
		}
		select { // and nothing more
		case <-arrived:
			t.Fatalf("more than %d notifications: %+v", n, got)
		case <-time.After(150 * time.Millisecond):
		}
		mu.Lock()
		defer mu.Unlock()
		bySid := map[string][]string{}
		for _, n := range got {
			if n.Seq <= 0 {
				t.Fatalf("seq %d", n.Seq)
			}
			bySid[n.Sid] = append(bySid[n.Sid], n.Publication.Pid)
		}
		got = nil
		return bySid
	}

	// Past data first: a publication in 1.4.2 before anyone subscribes.
	early := publish(cellcast.Cell("1.4.2"), "early")
	deep := subscribe(cellcast.SubscribeRequest{Location: cellcast.Cell("1.4.2.3"), Past: time.Minute})
	if len(deep.Past) != 1 || deep.Past[0].Pid != early.Pid || deep.Past[0].Desc != "early" {
		t.Fatalf("past results of 1.4.2.3 = %+v, want the ancestor's %v", deep.Past, early.Pid)
	}
	shallow := subscribe(cellcast.SubscribeRequest{Location: cellcast.Cell("1.4")})
	topic := subscribe(cellcast.SubscribeRequest{Location: cellcast.Topic("sports/soccer")})
	filtered := subscribe(cellcast.SubscribeRequest{Location: cellcast.Cell("1"), Filter: &cellcast.Filter{Keyword: "FIRE"}})

	// 1.4.2.3.1 is under all three geo subscriptions; 1.4.1 under 1.4 and 1; 1.5 under 1 only.
	p1 := publish(cellcast.Cell("1.4.2.3.1"), "a fire")
	if p1.Matched != 3 {
		t.Fatalf("publish in 1.4.2.3.1 matched %d, want 3", p1.Matched)
	}
	p2 := publish(cellcast.Cell("1.4.1"), "flood")
	p3 := publish(cellcast.Topic("sports"), "derby")
	if p4 := publish(cellcast.Topic("sports/tennis"), ""); p4.Matched != 0 {
		t.Fatalf("sports/tennis matched %d", p4.Matched)
	}
	want := map[string][]string{
		deep.Sid:     {p1.Pid},
		shallow.Sid:  {p1.Pid, p2.Pid},
		topic.Sid:    {p3.Pid},
		filtered.Sid: {p1.Pid},
	}
	if bySid := wait(5); fmt.Sprint(bySid) != fmt.Sprint(want) {
		t.Fatalf("notifications\n got %v\nwant %v", bySid, want)
	}
	q, err := sub.Query(ctx, cellcast.QueryRequest{Attr: "uid", Eq: "p", K: 1})
	if err != nil || len(q.Publications) != 1 || q.Publications[0].Topic != "sports/tennis" {
		t.Fatalf("the latest publication names its topic: %+v, %v", q, err)
	}

	// lat/lng map onto the world grid: a point subscription hears a radius publication around it.
	pt := subscribe(cellcast.SubscribeRequest{Location: cellcast.Point(40.7580, -73.9855)})
	if depth := strings.Count(pt.Cell, ".") + 1; depth != geo.DefaultLevel+1 {
		t.Fatalf("a point maps to %v, depth %d", pt.Cell, depth)
	}
	around, err := pub.Publish(ctx, cellcast.PublishRequest{Location: cellcast.Circle(40.7580, -73.9855, 2000), Expires: time.Minute})
	if err != nil || around.Matched < 1 {
		t.Fatalf("radius publication matched %+v, %v", around, err)
	}
	if bySid := wait(around.Matched); len(bySid[pt.Sid]) != 1 {
		t.Fatalf("point subscription not notified: %v", bySid)
	}

	// Unsubscribe stops notifications.
	if err := shallow.Unsubscribe(ctx); err != nil {
		t.Fatal(err)
	}
	publish(cellcast.Cell("1.4.7"), "")
	if bySid := wait(0); len(bySid) != 0 {
		t.Fatalf("after unsubscribe: %v", bySid)
	}
}

func TestResumeAfterDroppedConnectionLosesNothing(t *testing.T) {
	b := start(t, Config{})
	pub := dial(t, b, nil)
	a := dial(t, b, nil)
	s := a.do(msg{"op": "subscribe", "uid": "bob", "cell": "1.2", "future": "5m"})
	sid := s["sid"].(string)
	var pids []string
	publish := func(n int) {
		for range n {
			pids = append(pids, pub.do(msg{"op": "publish", "uid": "p", "cell": "1.2.3", "expires": "5m"})["pid"].(string))
		}
	}
	publish(5)
	got := pidsOf(a.wait(5))
	last := a.notes[4]["seq"].(float64)
	a.ws.Close() // the connection drops
	<-a.done
	publish(7) // missed while away
	bb := dial(t, b, nil)
	r := bb.do(msg{"op": "resume", "uid": "bob", "sid": sid, "after": last})
	wantOp(t, r, "resumed")
	if r["replayed"] != 7.0 {
		t.Fatalf("replayed %v, want 7", r["replayed"])
	}
	publish(3) // live again
	notes := bb.wait(10)
	got = append(got, pidsOf(notes)...)
	if fmt.Sprint(got) != fmt.Sprint(pids) {
		t.Fatalf("delivered\n %v\nwant\n %v", got, pids)
	}
	prev := last
	for _, n := range notes {
		if seq := n["seq"].(float64); seq <= prev {
			t.Fatalf("seq %v after %v", seq, prev)
		}
		prev = n["seq"].(float64)
	}
	bb.quiet()
	// Someone else cannot resume it; an unknown sid is not found.
	other := bb.do(msg{"op": "resume", "uid": "mallory", "sid": sid, "after": 0})
	if other["code"] != gateway.CodeForbidden {
		t.Fatalf("resume by another user: %v", other)
	}
	if m := bb.do(msg{"op": "resume", "uid": "bob", "sid": "zzzz-1.2", "after": 0}); m["code"] != gateway.CodeNotFound {
		t.Fatalf("unknown sid: %v", m)
	}
}

func TestBadRequestsGetErrorFramesAndTheConnectionLives(t *testing.T) {
	b := start(t, Config{Gateway: gateway.Limits{MaxFrame: 4096, MaxSubscriptions: 2}, Limits: subscriptions.Limits{MaxVertices: 50}})
	c := dial(t, b, nil)
	other := dial(t, b, nil)
	os := other.do(msg{"op": "subscribe", "uid": "o", "cell": "1.3", "future": "1m"})
	wantOp(t, os, "subscribed")
	cases := []struct {
		name, frame, code string
	}{
		{"malformed JSON", `{"id":"x","op":`, gateway.CodeBadRequest},
		{"not an object", `[1,2]`, gateway.CodeBadRequest},
		{"unknown op", `{"id":"x","op":"explode"}`, gateway.CodeUnknownOp},
		{"missing op", `{"id":"x"}`, gateway.CodeBadRequest},
		{"unknown field", `{"id":"x","op":"subscribe","uid":"u","cell":"1","fiture":"1s"}`, gateway.CodeBadRequest},
		{"wrong type", `{"id":"x","op":"subscribe","uid":"u","cell":1.4}`, gateway.CodeBadRequest},
		{"wrong duration", `{"id":"x","op":"subscribe","uid":"u","cell":"1","past":"soon"}`, gateway.CodeBadRequest},
		{"missing uid", `{"id":"x","op":"subscribe","cell":"1"}`, gateway.CodeBadRequest},
		{"missing location", `{"id":"x","op":"publish","uid":"u"}`, gateway.CodeBadRequest},
		{"two locations", `{"id":"x","op":"publish","uid":"u","cell":"1","topic":"a"}`, gateway.CodeBadRequest},
		{"invalid dewey zero", `{"id":"x","op":"publish","uid":"u","cell":"1.0.2"}`, gateway.CodeBadRequest},
		{"invalid dewey text", `{"id":"x","op":"publish","uid":"u","cell":"1.a"}`, gateway.CodeBadRequest},
		{"too deep", `{"id":"x","op":"publish","uid":"u","cell":"1` + strings.Repeat(".1", geo.MaxDepth) + `"}`, gateway.CodeBadRequest},
		{"bad topic", `{"id":"x","op":"subscribe","uid":"u","topic":"Sports//x"}`, gateway.CodeBadRequest},
		{"lat out of range", `{"id":"x","op":"subscribe","uid":"u","lat":91,"lng":10}`, gateway.CodeBadRequest},
		{"lng out of range", `{"id":"x","op":"publish","uid":"u","lat":10,"lng":-180.5,"radius_m":5,"expires":"1m"}`, gateway.CodeBadRequest},
		{"zero radius", `{"id":"x","op":"subscribe","uid":"u","lat":41,"lng":-74,"radius_m":0,"future":"1m"}`, gateway.CodeBadRequest},
		{"radius above the limit", `{"id":"x","op":"subscribe","uid":"u","lat":41,"lng":-74,"radius_m":200000,"future":"1m"}`, gateway.CodeBadRequest},
		{"polygon not closed", `{"id":"x","op":"publish","uid":"u","polygon":{"type":"Polygon","coordinates":[[[-74,40.7],[-73.9,40.7],[-73.9,40.8],[-74,40.8]]]},"expires":"1m"}`, gateway.CodeBadRequest},
		{"polygon of two points", `{"id":"x","op":"publish","uid":"u","polygon":{"type":"Polygon","coordinates":[[[-74,40.7],[-73.9,40.7],[-74,40.7]]]},"expires":"1m"}`, gateway.CodeBadRequest},
		{"polygon crossing itself", `{"id":"x","op":"subscribe","uid":"u","polygon":{"type":"Polygon","coordinates":[[[-74,40.7],[-73.9,40.8],[-73.9,40.7],[-74,40.8],[-74,40.7]]]},"future":"1m"}`, gateway.CodeBadRequest},
		{"polygon of too many vertices", `{"id":"x","op":"publish","uid":"u","polygon":` + manyVertices(60) + `,"expires":"1m"}`, gateway.CodeBadRequest},
		{"polygon not GeoJSON", `{"id":"x","op":"publish","uid":"u","polygon":{"type":"Point","coordinates":[1,2]},"expires":"1m"}`, gateway.CodeBadRequest},
		{"polygon and a point", `{"id":"x","op":"publish","uid":"u","lat":41,"lng":-74,"polygon":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]},"expires":"1m"}`, gateway.CodeBadRequest},
		{"lat without lng", `{"id":"x","op":"subscribe","uid":"u","lat":41}`, gateway.CodeBadRequest},
		{"negative radius", `{"id":"x","op":"subscribe","uid":"u","lat":41,"lng":-74,"radius_m":-5}`, gateway.CodeBadRequest},
		{"cover of a cell", `{"id":"x","op":"publish","uid":"u","cell":"1.2","cover":2,"expires":"1m"}`, gateway.CodeBadRequest},
		{"cover of a point", `{"id":"x","op":"publish","uid":"u","lat":41,"lng":-74,"cover":2,"expires":"1m"}`, gateway.CodeBadRequest},
		{"cover of a topic", `{"id":"x","op":"subscribe","uid":"u","topic":"never/made","cover":2,"future":"1m"}`, gateway.CodeBadRequest},
		{"cover of none", `{"id":"x","op":"publish","uid":"u","lat":41,"lng":-74,"radius_m":500,"cover":0,"expires":"1m"}`, gateway.CodeBadRequest},
		{"cover too large", `{"id":"x","op":"publish","uid":"u","lat":41,"lng":-74,"radius_m":500,"cover":17,"expires":"1m"}`, gateway.CodeBadRequest},
		{"cover not a number", `{"id":"x","op":"publish","uid":"u","lat":41,"lng":-74,"radius_m":500,"cover":"4","expires":"1m"}`, gateway.CodeBadRequest},
		{"absurd window", `{"id":"x","op":"subscribe","uid":"u","cell":"1","future":"10000h"}`, gateway.CodeBadRequest},
		{"negative window", `{"id":"x","op":"subscribe","uid":"u","cell":"1","past":-5}`, gateway.CodeBadRequest},
		{"absurd expiry", `{"id":"x","op":"publish","uid":"u","cell":"1","expires":1e300}`, gateway.CodeBadRequest},
		{"resume without after", `{"id":"x","op":"resume","uid":"u","sid":"abc-1"}`, gateway.CodeBadRequest},
		{"resume negative", `{"id":"x","op":"resume","uid":"u","sid":"abc-1","after":-1}`, gateway.CodeBadRequest},
		{"bad sid", `{"id":"x","op":"unsubscribe","uid":"u","sid":"no dash"}`, gateway.CodeBadRequest},
		{"unknown sid", `{"id":"x","op":"unsubscribe","uid":"u","sid":"abc-1"}`, gateway.CodeNotFound},
		{"oversized frame", `{"id":"x","op":"publish","uid":"u","cell":"1","desc":"` + strings.Repeat("a", 5000) + `"}`, gateway.CodeTooLarge},
		{"desc over the store limit", `{"id":"x","op":"publish","uid":"u","cell":"1","attrs":{"":"v"}}`, gateway.CodeBadRequest},
	}
	// Another user's subscription: only its user cancels or resumes it,
	// and without auth a request that names nobody is nobody.
	theirs := os["sid"].(string)
	cases = append(cases, []struct{ name, frame, code string }{
		{"unsubscribe of another's", fmt.Sprintf(`{"id":"x","op":"unsubscribe","uid":"u","sid":%q}`, theirs), gateway.CodeForbidden},
		{"unsubscribe naming nobody", fmt.Sprintf(`{"id":"x","op":"unsubscribe","sid":%q}`, theirs), gateway.CodeBadRequest},
		{"resume of another's", fmt.Sprintf(`{"id":"x","op":"resume","uid":"u","sid":%q,"after":0}`, theirs), gateway.CodeForbidden},
		{"resume naming nobody", fmt.Sprintf(`{"id":"x","op":"resume","sid":%q,"after":0}`, theirs), gateway.CodeBadRequest},
	}...)
	for _, tc := range cases {
		if err := c.ws.WriteMessage(websocket.TextMessage, []byte(tc.frame)); err != nil {
			t.Fatal(err)
		}
		m := c.next()
		if m["op"] != "error" || m["code"] != tc.code || m["message"] == "" {
			t.Errorf("%s: got %v, want error %s", tc.name, m, tc.code)
		}
		// A geometry error names its field.
		if field := geometryField(tc.name); field != "" && !strings.Contains(fmt.Sprint(m["message"]), field) {
			t.Errorf("%s: %q does not name %s", tc.name, m["message"], field)
		}
	}
	// None of them stored anything: a subscription over every face hears
	// of nothing published before it.
	for f := 1; f <= 6; f++ {
		if m := c.do(msg{"op": "subscribe", "uid": "u", "cell": strconv.Itoa(f), "past": "1m"}); len(m["results"].([]any)) != 0 {
			t.Fatalf("face %d holds %v after refused requests", f, m["results"])
		}
	}
	// The subscription limit: two fit, the third is refused.
	c.do(msg{"op": "subscribe", "uid": "u", "cell": "1.5", "future": "1m"})
	c.do(msg{"op": "subscribe", "uid": "u", "cell": "1.6", "future": "1m"})
	if m := c.do(msg{"op": "subscribe", "uid": "u", "cell": "1.7", "future": "1m"}); m["code"] != gateway.CodeTooMany {
		t.Fatalf("third subscription: %v", m)
	}
	// Nothing bad was stored, and everyone still works.
	p := c.do(msg{"op": "publish", "uid": "u", "cell": "1.3", "expires": "1m"})
	if p["matched"] != 1.0 {
		t.Fatalf("after the bad requests: %v", p)
	}
	if n := other.wait(1); pidsOf(n)[0] != p["pid"] {
		t.Fatalf("other client got %v", n)
	}
	check := dial(t, b, nil).do(msg{"op": "subscribe", "uid": "z", "cell": "1", "past": "1m"})
	if got := pidsOf(results(check)); len(got) != 1 || got[0] != p["pid"] {
		t.Fatalf("stored publications after the bad requests: %v", got)
	}
}

func TestRateLimit(t *testing.T) {
	b := start(t, Config{Gateway: gateway.Limits{Rate: 1, Burst: 3}})
	c := dial(t, b, nil)
	codes := map[any]int{}
	for range 10 {
		codes[c.do(msg{"op": "publish", "uid": "u", "cell": "1"})["op"]]++
	}
	if codes["published"] < 3 || codes["error"] < 5 {
		t.Fatalf("with burst 3 at 1/s, 10 requests gave %v", codes)
	}
}

// rawSubscribe opens a WebSocket client that subscribes to cell 1 and
// then reads only when the test says so.
func rawSubscribe(t *testing.T, b *Broker) (*websocket.Conn, msg) {
	t.Helper()
	ws, _, err := websocketDial("ws://" + b.HTTPAddr() + "/ws")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	ws.WriteJSON(msg{"id": "s", "op": "subscribe", "uid": "s", "cell": "1", "future": "5m"})
	var s msg
	if err := ws.ReadJSON(&s); err != nil || s["op"] != "subscribed" {
		t.Fatalf("subscribe: %v %v", s, err)
	}
	return ws, s
}

// readNotes reads notifications until want arrived or the read fails,
// returning their pids and the last seq.
func readNotes(ws *websocket.Conn, want int) (pids []string, last float64, err error) {
	for len(pids) < want {
		ws.SetReadDeadline(time.Now().Add(30 * time.Second))
		var n msg
		if err = ws.ReadJSON(&n); err != nil {
			return pids, last, err
		}
		if n["op"] != "notification" {
			return pids, last, fmt.Errorf("unexpected frame %v", n)
		}
		if n["seq"].(float64) <= last {
			return pids, last, fmt.Errorf("seq %v after %v", n["seq"], last)
		}
		pids = append(pids, n["publication"].(msg)["pid"].(string))
		last = n["seq"].(float64)
	}
	return pids, last, nil
}

func TestSlowReaderFallsBehindAndCatchesUpWithoutACut(t *testing.T) {
	b := start(t, Config{Gateway: gateway.Limits{SendQueue: 8}})
	slow, _ := rawSubscribe(t, b)
	fast := dial(t, b, nil)
	wantOp(t, fast.do(msg{"op": "subscribe", "uid": "f", "cell": "1.1", "future": "5m"}), "subscribed")
	big := strings.Repeat("x", 4000)
	pub := dial(t, b, nil)
	var pids []string
	publish := func() {
		r := pub.do(msg{"op": "publish", "uid": "p", "cell": "1.1", "expires": "5m", "desc": big})
		pids = append(pids, r["pid"].(string))
		b.svc.Drain()
	}
	// The slow client does not read until its socket buffers and queue
	// are full and the hub has skipped some of its notifications.
	for i := 0; b.svc.Stats().Skipped == 0; i++ {
		if i > 20000 {
			t.Fatal("the slow client never fell behind")
		}
		publish()
	}
	for range 50 {
		publish()
	}
	got, _, err := readNotes(slow, len(pids))
	if err != nil {
		t.Fatalf("slow client after %d of %d: %v", len(got), len(pids), err)
	}
	if fmt.Sprint(got) != fmt.Sprint(pids) {
		t.Fatal("the slow client's notifications differ from what was published, in order")
	}
	if fmt.Sprint(pidsOf(fast.wait(len(pids)))) != fmt.Sprint(pids) {
		t.Fatal("the reading client missed notifications")
	}
	if st := b.svc.Stats(); st.CatchUps == 0 || st.Lagging != 0 {
		t.Fatalf("stats %+v: want catch-ups and nothing left lagging", st)
	}
}

func TestStoppedReaderIsCutAndResumes(t *testing.T) {
	b := start(t, Config{Gateway: gateway.Limits{SendQueue: 8, WriteTimeout: time.Second}})
	slow, s := rawSubscribe(t, b)
	// A client in the same cell that reads all along.
	fast := dial(t, b, nil)
	wantOp(t, fast.do(msg{"op": "subscribe", "uid": "f", "cell": "1", "future": "5m"}), "subscribed")
	var fastGot []string
	big := strings.Repeat("x", 4000)
	pub := dial(t, b, nil)
	var pids []string
	for i := 0; !strings.Contains(metricsText(t, b), `cellcast_connections_cut_total{reason="write_timeout"} 1`); i++ {
		if i > 50000 {
			t.Fatal("the stopped client was never cut")
		}
		r := pub.do(msg{"op": "publish", "uid": "p", "cell": "1.1", "expires": "5m", "desc": big})
		pids = append(pids, r["pid"].(string))
		b.svc.Drain()
		fastGot = append(fastGot, pidsOf(fast.wait(1))...)
		fast.notes = nil
		if i%100 == 99 {
			time.Sleep(50 * time.Millisecond) // let the write deadline pass
		}
	}
	if fmt.Sprint(fastGot) != fmt.Sprint(pids) {
		t.Fatal("the reading client missed notifications while the other stopped")
	}
	got, last, err := readNotes(slow, len(pids))
	if err == nil {
		t.Fatal("the cut client read everything")
	}
	// The frame the stalled write stopped in is finished, and a close
	// frame says why.
	var ce *websocket.CloseError
	if !errorsAs(err, &ce) || ce.Code != websocket.CloseTryAgainLater || !strings.Contains(ce.Text, "not reading") {
		t.Fatalf("the stopped client read %d of %d, then: %v; want a close frame 1013 saying why", len(got), len(pids), err)
	}
	again := dial(t, b, nil)
	r := again.do(msg{"op": "resume", "uid": "s", "sid": s["sid"], "after": last})
	wantOp(t, r, "resumed")
	got = append(got, pidsOf(again.wait(int(r["replayed"].(float64))))...)
	if fmt.Sprint(got) != fmt.Sprint(pids) {
		t.Fatalf("before and after the cut: %d notifications, want %d", len(got), len(pids))
	}
}

func metricsText(t *testing.T, b *Broker) string {
	t.Helper()
	resp, err := http.Get("http://" + b.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

func errorsAs(err error, target **websocket.CloseError) bool {
	ce, ok := err.(*websocket.CloseError)
	if ok {
		*target = ce
	}
	return ok
}

func TestShutdownAndRestartKeepPublications(t *testing.T) {
	dir := t.TempDir()
	b := start(t, Config{DataDir: dir})
	c := dial(t, b, nil)
	s := c.do(msg{"op": "subscribe", "uid": "u", "cell": "1.2", "future": "10m"})
	p := c.do(msg{"op": "publish", "uid": "p", "cell": "1.2.1", "expires": "10m"})
	c.wait(1)
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-c.done
	var ce *websocket.CloseError
	if !errorsAs(c.err, &ce) || ce.Code != websocket.CloseGoingAway {
		t.Fatalf("client saw %v at shutdown", c.err)
	}
	b2 := start(t, Config{DataDir: dir})
	c2 := dial(t, b2, nil)
	q := c2.do(msg{"op": "subscribe", "uid": "v", "cell": "1", "past": "10m"})
	if got := pidsOf(results(q)); len(got) != 1 || got[0] != p["pid"] {
		t.Fatalf("after restart, past results %v, want %v", got, p["pid"])
	}
	// The subscription survived too: resume it and hear new publications.
	r := c2.do(msg{"op": "resume", "uid": "u", "sid": s["sid"], "after": c.notes[0]["seq"]})
	if r["replayed"] != 0.0 {
		t.Fatalf("resume after restart: %v", r)
	}
	p2 := c2.do(msg{"op": "publish", "uid": "p", "cell": "1.2.2", "expires": "10m"})
	if n := c2.wait(1); pidsOf(n)[0] != p2["pid"] {
		t.Fatalf("after restart got %v", n)
	}
}

// TestFrameSizes sends replies in each of the WebSocket length encodings
// (7-bit, 16-bit, 64-bit) through the broker's own frame writer.
func TestFrameSizes(t *testing.T) {
	b := start(t, Config{})
	c := dial(t, b, nil)
	sub := c.do(msg{"op": "subscribe", "uid": "s", "cell": "1.2", "future": "1m"})
	var pids []string
	for _, n := range []int{1, 120, 200, 4000, 4000, 4000, 4000, 4000, 4000, 4000, 4000, 4000, 4000, 4000, 4000, 4000, 4000, 4000, 4000, 4000} {
		p := c.do(msg{"op": "publish", "uid": "p", "cell": "1.2", "expires": "1m", "desc": strings.Repeat("d", n)})
		pids = append(pids, p["pid"].(string))
	}
	notes := c.wait(len(pids))
	if got := pidsOf(notes); fmt.Sprint(got) != fmt.Sprint(pids) {
		t.Fatalf("notifications %v", got)
	}
	for i, n := range notes {
		if n["sid"] != sub["sid"] || len(n["publication"].(msg)["desc"].(string)) == 0 {
			t.Fatalf("notification %d: %v", i, n)
		}
	}
	past := c.do(msg{"op": "subscribe", "uid": "s", "cell": "1.2", "past": "1m"}) // a reply over 64 KiB
	if got := len(results(past)); got != len(pids) {
		t.Fatalf("past results: %d, want %d", got, len(pids))
	}
}

func TestOpenModeRefusesNonLoopback(t *testing.T) {
	_, err := Start(Config{DataDir: t.TempDir(), HTTPAddr: "0.0.0.0:0", NATSListen: "127.0.0.1:0", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err == nil || !strings.Contains(err.Error(), "auth") {
		t.Fatalf("open broker on 0.0.0.0: %v", err)
	}
}

func writeFile(t *testing.T, name, body string) string {
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestEndedSubscriptionsFreeTheirSlot(t *testing.T) {
	b := start(t, Config{Gateway: gateway.Limits{MaxSubscriptions: 1}})
	c := dial(t, b, nil)
	wantOp(t, c.do(msg{"op": "subscribe", "uid": "u", "cell": "1.2", "future": "1s"}), "subscribed")
	if m := c.do(msg{"op": "subscribe", "uid": "u", "cell": "1.3", "future": "1s"}); m["code"] != gateway.CodeTooMany {
		t.Fatalf("second subscription: %v", m)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := c.do(msg{"op": "subscribe", "uid": "u", "cell": "1.3", "future": "1m"})
		if m["op"] == "subscribed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ended subscription still holds the slot: %v", m)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n := b.svc.Stats().Routes; n != 1 {
		t.Fatalf("%d routes", n)
	}
	if len(c.ended) != 1 || c.ended[0]["reason"] != "window_over" {
		t.Fatalf("ended frames %v, want the first subscription's window_over", c.ended)
	}
}

// TestHTTPHealthAndMetrics covers the HTTP side: the API (a subscription
// made over HTTP is resumed over WebSocket), health, readiness and the
// metrics the issue names.
// postAPI posts body to /api/<op> and returns the status and the reply.
func postAPI(t *testing.T, b *Broker, op, body string) (int, msg) {
	t.Helper()
	resp, err := http.Post("http://"+b.HTTPAddr()+"/api/"+op, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m msg
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, m
}

func TestHTTPHealthAndMetrics(t *testing.T) {
	b := start(t, Config{})
	base := "http://" + b.HTTPAddr()
	post := func(op, body string) (int, msg) { return postAPI(t, b, op, body) }
	code, s := post("subscribe", `{"id":"h1","uid":"hana","cell":"1.6","future":"1m"}`)
	if code != 200 || s["op"] != "subscribed" || s["id"] != "h1" {
		t.Fatalf("HTTP subscribe: %d %v", code, s)
	}
	if code, m := post("publish", `{"uid":"p","cell":"1.6.1","expires":"1m"}`); code != 200 || m["matched"] != 1.0 {
		t.Fatalf("HTTP publish: %d %v", code, m)
	}
	for body, want := range map[string]int{`{"uid":"p","cell":"x"}`: 400, `{"uid":"p","cell":"1","bogus":1}`: 400} {
		if code, m := post("publish", body); code != want || m["op"] != "error" {
			t.Fatalf("HTTP publish %s: %d %v", body, code, m)
		}
	}
	if code, m := post("unsubscribe", `{"uid":"hana","sid":"zz-1.6"}`); code != 404 || m["code"] != gateway.CodeNotFound {
		t.Fatalf("HTTP unsubscribe of an unknown sid: %d %v", code, m)
	}
	if code, m := post("resume", `{"uid":"hana","sid":"`+s["sid"].(string)+`","after":0}`); code != 400 {
		t.Fatalf("HTTP resume: %d %v", code, m)
	}
	// The HTTP subscription resumes over WebSocket with what it missed.
	c := dial(t, b, nil)
	r := c.do(msg{"op": "resume", "uid": "hana", "sid": s["sid"], "after": 0})
	if r["replayed"] != 1.0 {
		t.Fatalf("resume of an HTTP subscription: %v", r)
	}
	c.wait(1)
	if code, m := post("publish", `{"uid":"p","cell":"1.6.2","expires":"1m"}`); code != 200 || m["matched"] != 1.0 {
		t.Fatalf("HTTP publish to the resumed subscription: %d %v", code, m)
	}
	c.wait(2)

	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Fatalf("healthz %d", code)
	}
	if code, _ := get("/readyz"); code != 200 {
		t.Fatalf("readyz %d", code)
	}
	want := []string{
		`cellcast_requests_total{op="publish",outcome="ok",transport="http"} 2`,
		`cellcast_requests_total{op="publish",outcome="bad_request",transport="http"} 2`,
		`cellcast_notifications_sent_total{transport="ws"} 2`, // replayed and live
		`cellcast_publish_to_push_seconds_count 1`,            // live only
		`cellcast_connections{transport="ws"} 1`,
		`cellcast_live_subscriptions 1`,
		`cellcast_send_queue_drops_total 0`,
		"cellcast_matches_unrouted_total ", // 0 or 1: the resume may come first
		`cellcast_lsm_level_bytes{db="dualdb",level="0"}`,
		`cellcast_lsm_l0_sublevels{db="dualdb"}`,
		`cellcast_lsm_write_amplification{db="dualdb"}`,
		`cellcast_lsm_block_cache_hit_ratio{db="dualdb"}`,
		`cellcast_lsm_compaction_bytes_total{db="dualdb",dir="in"}`,
	}
	// Counters move as the dispatcher and the writers get to them.
	var missing []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, metrics := get("/metrics")
		missing = missing[:0]
		for _, series := range want {
			if !strings.Contains(metrics, series) {
				missing = append(missing, series)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(missing) > 0 {
		t.Fatalf("metrics lack %v", missing)
	}
	b.Shutdown(context.Background())
	if _, err := http.Get(base + "/readyz"); err == nil {
		t.Fatal("still serving after shutdown")
	}
}

// TestDiskFailureTurnsReadyzAndLosesNothing: once the store's disk fails a
// write, publishes fail with internal (not acknowledged), and keep failing
// after the disk recovers (the error is sticky); /readyz answers 503, the
// metric counts it, and every publication acknowledged before is still
// served. Only the write that met the failure may be seen (its outcome is
// unknown, as internal says); none after it is.
func TestDiskFailureTurnsReadyzAndLosesNothing(t *testing.T) {
	var failing atomic.Bool
	fs := vfs.Inject(vfs.Default, func(op vfs.Op, path string) error {
		if failing.Load() && (op == vfs.OpWrite || op == vfs.OpSync) && strings.HasSuffix(path, ".log") {
			return syscall.EIO
		}
		return nil
	})
	b := start(t, Config{FS: fs, Indexes: "none"})
	c := dial(t, b, nil)
	var pids []string
	for range 5 {
		r := c.do(msg{"op": "publish", "uid": "p", "cell": "1.1", "expires": "5m"})
		wantOp(t, r, "published")
		pids = append(pids, r["pid"].(string))
	}
	failing.Store(true)
	if r := c.do(msg{"op": "publish", "uid": "p", "cell": "1.1", "expires": "5m"}); r["code"] != "internal" {
		t.Fatalf("publish on a failing disk: %v", r)
	}
	failing.Store(false) // the error is sticky all the same
	for range 3 {
		if r := c.do(msg{"op": "publish", "uid": "p", "cell": "1.1", "expires": "5m"}); r["code"] != "internal" {
			t.Fatalf("publish after a disk failure: %v", r)
		}
	}
	resp, err := http.Get("http://" + b.HTTPAddr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "refuses writes") {
		t.Fatalf("readyz after a disk failure: %d %s", resp.StatusCode, body)
	}
	if m := metricsText(t, b); !strings.Contains(m, `cellcast_lsm_background_errors_total{db="dualdb"}`) ||
		strings.Contains(m, `cellcast_lsm_background_errors_total{db="dualdb"} 0`) {
		t.Fatal("the failure is not counted in cellcast_lsm_background_errors_total")
	}
	r := c.do(msg{"op": "subscribe", "uid": "s", "cell": "1", "past": "5m"})
	got := pidsOf(results(r))
	for _, pid := range pids {
		if !slices.Contains(got, pid) {
			t.Fatalf("acknowledged %s is missing after the failure: %v", pid, got)
		}
	}
	if len(got) > len(pids)+1 {
		t.Fatalf("%d publications served, %d acknowledged: writes refused after the failure reached the store", len(got), len(pids))
	}
}

// TestCoverOnTheWire checks the cover field of the protocol on raw frames:
// the replies list the cells, the id names the first, and a publication
// over all of them is one match and one notification.
func TestCoverOnTheWire(t *testing.T) {
	b := start(t, Config{})
	c := dial(t, b, nil)
	id, _ := geo.PointCell(40.758, -73.9855, 13)
	cid, _ := geo.CellID(id)
	centre := cid.LatLng() // where its four children meet
	lat, lng := centre.Lat.Degrees(), centre.Lng.Degrees()
	s := c.do(msg{"op": "subscribe", "uid": "u", "lat": lat, "lng": lng, "radius_m": 100, "cover": 4, "future": "1m"})
	wantOp(t, s, "subscribed")
	cover, _ := s["cover"].([]any)
	if len(cover) < 2 || len(cover) > 4 || cover[0] != s["cell"] || !strings.HasSuffix(s["sid"].(string), "-"+s["cell"].(string)) {
		t.Fatalf("subscribed %v: want a cover of 2 to 4 whose first cell the sid names", s)
	}
	p := c.do(msg{"op": "publish", "uid": "u", "cell": id[:1].String(), "expires": "1m"})
	q := c.do(msg{"op": "publish", "uid": "u", "lat": lat, "lng": lng, "radius_m": 50, "cover": 4, "expires": "1m"})
	if p["matched"] != 1.0 || q["matched"] != 1.0 || q["cover"] == nil {
		t.Fatalf("published %v and %v: want one match each, and the second's cover", p, q)
	}
	if got := pidsOf(c.wait(2)); len(got) != 2 || got[0] != p["pid"] || got[1] != q["pid"] {
		t.Fatalf("notifications %v, want %v and %v once", got, p["pid"], q["pid"])
	}
}

// geometryField is the field a geometry case's error must name.
func geometryField(name string) string {
	switch {
	case strings.HasPrefix(name, "lat "):
		return "lat"
	case strings.HasPrefix(name, "lng "):
		return "lng"
	case strings.Contains(name, "radius"):
		return "radius_m"
	case strings.HasPrefix(name, "polygon") && name != "polygon and a point":
		return "polygon"
	}
	return ""
}

// manyVertices is a GeoJSON polygon of n vertices on a circle.
func manyVertices(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"Polygon","coordinates":[[`)
	for k := 0; k <= n; k++ {
		a := 2 * math.Pi * float64(k%n) / float64(n)
		if k > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "[%v,%v]", -74+0.01*math.Cos(a), 40.7+0.01*math.Sin(a))
	}
	b.WriteString(`]]}`)
	return b.String()
}
