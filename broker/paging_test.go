package broker

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/gateway"
	"github.com/seed84792017/cellcast/listdb"
)

// The case: 300 publications with 4 KiB descriptions of '<',
// which JSON escapes to \u003c, six times the bytes: about 7.4 MB of past
// results, far over the reply budget and over NATS's 1 MiB max payload.
const (
	pagedCount  = 300
	pagedCell   = "1.7"
	defaultBudg = 256 << 10
)

func ltDesc(i int) string { return fmt.Sprintf("%08d", i) + strings.Repeat("<", 4096-8) }

// publishMany publishes n '<'-heavy publications in cell over one
// WebSocket connection, in order, and returns their pids newest first:
// the store's order of past results.
func publishMany(t *testing.T, b *Broker, cell string, n int) []string {
	t.Helper()
	c := dial(t, b, nil)
	ids := make([]string, n)
	for i := range n {
		ids[i] = c.send(msg{"op": "publish", "uid": "pete", "cell": cell, "expires": "1h", "desc": ltDesc(i), "attrs": msg{"category": "lt"}})
	}
	pids := make([]string, n)
	for i := range n {
		r := c.next()
		if r["op"] != "published" || r["id"] != ids[i] {
			t.Fatalf("publish %d: %v", i, brief(r))
		}
		pids[n-1-i] = r["pid"].(string)
	}
	return pids
}

// startPaged starts a broker with the default budget and the issue's
// publications.
func startPaged(t *testing.T) (*Broker, []string) {
	b := start(t, Config{Durability: listdb.Written})
	return b, publishMany(t, b, pagedCell, pagedCount)
}

// rawFrame reads one frame of a raw WebSocket, with its size.
func rawFrame(t *testing.T, ws *websocket.Conn) (msg, int) {
	t.Helper()
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, data, err := ws.ReadMessage()
	if err != nil {
		t.Fatalf("connection ended: %v", err)
	}
	var m msg
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("frame %.200q: %v", data, err)
	}
	return m, len(data)
}

func rawDial(t *testing.T, b *Broker) *websocket.Conn {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+b.HTTPAddr()+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

// brief is m without its publications, for failure messages.
func brief(m msg) msg {
	out := msg{}
	for k, v := range m {
		if k != "results" && k != "recent" && k != "publication" {
			out[k] = v
		}
	}
	return out
}

func pidList(v any) []string {
	var out []string
	for _, r := range v.([]any) {
		out = append(out, r.(msg)["pid"].(string))
	}
	return out
}

// readPushedPages reads a paged reply's first frame, then its pages,
// which must come next, in order, each at most budget bytes. It returns
// the concatenated pids under key and the number of pages.
func readPushedPages(t *testing.T, next func() (msg, int), id any, of, key string, budget int) ([]string, int) {
	t.Helper()
	first, size := next()
	if first["id"] != id || first["op"] != of || first["more"] != true {
		t.Fatalf("first reply: %v", brief(first))
	}
	if size > budget {
		t.Fatalf("first reply of %d bytes over the budget %d", size, budget)
	}
	pages := int(first["pages"].(float64))
	if pages < 2 {
		t.Fatalf("%d pages", pages)
	}
	got := pidList(first[key])
	for p := 2; p <= pages; p++ {
		m, size := next()
		if m["op"] != "page" || m["id"] != id || m["of"] != of || m["page"] != float64(p) || m["more"] != (p < pages) {
			t.Fatalf("page %d of %d: %v", p, pages, brief(m))
		}
		if size > budget {
			t.Fatalf("page %d of %d bytes over the budget %d", p, size, budget)
		}
		got = append(got, pidList(m["results"])...)
	}
	return got, pages
}

// TestPagedPastResultsOverWebSocket: the past results come as the reply
// and page frames, each within the budget, together exactly the stored
// publications newest first; publications that race the subscribe are
// either among them or notified after the last page, each once; the
// connection and the subscription live on.
func TestPagedPastResultsOverWebSocket(t *testing.T) {
	b, want := startPaged(t)
	ws := rawDial(t, b)
	if err := ws.WriteJSON(msg{"id": "s", "op": "subscribe", "uid": "sue", "cell": pagedCell, "past": "1h", "future": "1h"}); err != nil {
		t.Fatal(err)
	}
	// Publications racing the subscribe: stamped before it they are past
	// results, after it notifications, which the hub holds until every
	// page is queued.
	pc := dial(t, b, nil)
	var extra []string // oldest first
	for i := range 3 {
		r := pc.do(msg{"op": "publish", "uid": "pete", "cell": pagedCell + ".1", "expires": "1h", "desc": fmt.Sprint("race ", i)})
		extra = append(extra, r["pid"].(string))
	}
	next := func() (msg, int) { return rawFrame(t, ws) }
	got, pages := readPushedPages(t, next, "s", "subscribed", "results", defaultBudg)
	t.Logf("%d results in %d pages", len(got), pages)
	// Oracle: the results reversed, then the notifications, are every
	// publication in the order it was made.
	oldestFirst := slices.Clone(want)
	slices.Reverse(oldestFirst)
	all := append(oldestFirst, extra...)
	seen := slices.Clone(got)
	slices.Reverse(seen)
	for len(seen) < len(all) {
		m, _ := next()
		if m["op"] != "notification" {
			t.Fatalf("after %d of %d publications: %v", len(seen), len(all), brief(m))
		}
		seen = append(seen, m["publication"].(msg)["pid"].(string))
	}
	t.Logf("%d of the racing publications came as notifications", len(all)-len(got))
	if !slices.Equal(seen, all) {
		t.Fatalf("results and notifications:\n%v\nwant\n%v", seen, all)
	}
	// Still connected, still subscribed.
	later := pc.do(msg{"op": "publish", "uid": "pete", "cell": pagedCell, "expires": "1h", "desc": "later"})
	if m, _ := next(); m["op"] != "notification" || m["publication"].(msg)["pid"] != later["pid"] {
		t.Fatalf("later notification: %v", brief(m))
	}
	ws.WriteJSON(msg{"id": "u", "op": "unsubscribe", "uid": "sue", "sid": "x-1"})
	if m, _ := next(); m["id"] != "u" || m["op"] != "error" {
		t.Fatalf("the connection does not answer: %v", brief(m))
	}
}

// TestPagedPastResultsOverNATS: with a budget over the NATS max payload
// the pages shrink to fit it; each is a message to the reply subject, in
// order; later notifications follow on the user's subject.
func TestPagedPastResultsOverNATS(t *testing.T) {
	b := start(t, Config{Durability: listdb.Written, Gateway: gateway.Limits{ReplyBudget: 8 << 20}})
	want := publishMany(t, b, pagedCell, pagedCount)
	nc, err := nats.Connect(b.NATSURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	notify, _ := nc.SubscribeSync("cellcast.notify.sue")
	inbox := nc.NewRespInbox()
	replies, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(msg{"id": 9, "uid": "sue", "cell": pagedCell, "past": "1h", "future": "1h"})
	if err := nc.PublishRequest("cellcast.subscribe", inbox, data); err != nil {
		t.Fatal(err)
	}
	next := func() (msg, int) {
		m, err := replies.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var out msg
		if err := json.Unmarshal(m.Data, &out); err != nil {
			t.Fatal(err)
		}
		return out, len(m.Data)
	}
	limit := int(nc.MaxPayload()) - 1<<10
	got, pages := readPushedPages(t, next, 9.0, "subscribed", "results", limit)
	if !slices.Equal(got, want) {
		t.Fatalf("%d results in %d pages, not the %d stored newest first", len(got), pages, len(want))
	}
	pc := dial(t, b, nil)
	later := pc.do(msg{"op": "publish", "uid": "pete", "cell": pagedCell, "expires": "1h", "desc": "later"})
	if n := nextMsg(t, notify); n["publication"].(msg)["pid"] != later["pid"] {
		t.Fatalf("later notification: %v", brief(n))
	}
}

// postRaw posts body to /api/<op>, returning the status, the reply and
// the body's size.
func postRaw(t *testing.T, b *Broker, op, body string) (int, msg, int) {
	t.Helper()
	resp, err := http.Post("http://"+b.HTTPAddr()+"/api/"+op, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var m msg
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%.200q: %v", data, err)
	}
	return resp.StatusCode, m, len(strings.TrimSuffix(string(data), "\n"))
}

// pullPages follows a paged HTTP reply's cursors to the end, checking each
// page's envelope and size, and returns the concatenated pids.
func pullPages(t *testing.T, b *Broker, first msg, size int, key, of, uid string) []string {
	t.Helper()
	if first["more"] != true || first["next"] == nil || size > defaultBudg {
		t.Fatalf("first reply of %d bytes: more %v next %v", size, first["more"], first["next"])
	}
	got := pidList(first[key])
	pages := int(first["pages"].(float64))
	cur := first["next"].(string)
	for p := 2; ; p++ {
		code, m, size := postRaw(t, b, "page", fmt.Sprintf(`{"uid":%q,"cursor":%q}`, uid, cur))
		if code != 200 || m["op"] != "page" || m["of"] != of || m["page"] != float64(p) || m["more"] != (p < pages) {
			t.Fatalf("page %d of %d: %d %v", p, pages, code, brief(m))
		}
		if size > defaultBudg {
			t.Fatalf("page %d of %d bytes over the budget", p, size)
		}
		got = append(got, pidList(m["results"])...)
		if m["more"] == false {
			if m["next"] != nil {
				t.Fatalf("the last page has a next: %v", m["next"])
			}
			return got
		}
		cur = m["next"].(string)
	}
}

// TestPagedPastResultsOverHTTP: the body is the first page and a cursor;
// the page op returns the next pages, within the budget, together the
// stored publications newest first; another user's cursor is forbidden,
// an unknown one not_found; the subscription lives on.
func TestPagedPastResultsOverHTTP(t *testing.T) {
	b, want := startPaged(t)
	code, s, size := postRaw(t, b, "subscribe", `{"id":"h","uid":"sue","cell":"`+pagedCell+`","past":"1h","future":"1h"}`)
	if code != 200 || s["op"] != "subscribed" || s["live"] != true {
		t.Fatalf("%d %v", code, brief(s))
	}
	if code, m, _ := postRaw(t, b, "page", fmt.Sprintf(`{"uid":"mallory","cursor":%q}`, s["next"])); code != 403 || m["code"] != "forbidden" {
		t.Fatalf("another user's cursor: %d %v", code, brief(m))
	}
	if code, m, _ := postRaw(t, b, "page", `{"uid":"sue","cursor":"0123456789abcdef0123456789abcdef.2"}`); code != 404 || m["code"] != "not_found" {
		t.Fatalf("an unknown cursor: %d %v", code, brief(m))
	}
	if code, m, _ := postRaw(t, b, "subscribe", `{"uid":"sue","cell":"1.8","paging":"push"}`); code != 400 {
		t.Fatalf("push paging over HTTP: %d %v", code, brief(m))
	}
	if got := pullPages(t, b, s, size, "results", "subscribed", "sue"); !slices.Equal(got, want) {
		t.Fatalf("%d results, not the %d stored newest first", len(got), len(want))
	}
	c := dial(t, b, nil)
	if r := c.do(msg{"op": "resume", "uid": "sue", "sid": s["sid"], "after": 0}); r["op"] != "resumed" || r["replayed"] != 0.0 {
		t.Fatalf("resume: %v", r)
	}
	later := c.do(msg{"op": "publish", "uid": "pete", "cell": pagedCell, "expires": "1h", "desc": "later"})
	if n := c.wait(1); n[0]["publication"].(msg)["pid"] != later["pid"] {
		t.Fatalf("later notification: %v", brief(n[0]))
	}
}

// TestPagedQueryAndRecent: query results and a self-join publish's recent
// are paged like past results: pushed over WebSocket, pulled over HTTP,
// and over WebSocket too when the request asks for cursors.
func TestPagedQueryAndRecent(t *testing.T) {
	b, want := startPaged(t)
	ws := rawDial(t, b)
	next := func() (msg, int) { return rawFrame(t, ws) }
	ws.WriteJSON(msg{"id": "q", "op": "query", "attr": "uid", "eq": "pete", "k": 1000})
	if got, _ := readPushedPages(t, next, "q", "results", "results", defaultBudg); !slices.Equal(got, want) {
		t.Fatalf("query over WebSocket: %d results, not the %d published newest first", len(got), len(want))
	}
	code, q, size := postRaw(t, b, "query", `{"uid":"quinn","attr":"category","eq":"lt","k":1000}`)
	if code != 200 || q["count"] != float64(pagedCount) {
		t.Fatalf("%d %v", code, brief(q))
	}
	if got := pullPages(t, b, q, size, "results", "results", "quinn"); !slices.Equal(got, want) {
		t.Fatalf("query over HTTP: %d results, not the %d published newest first", len(got), len(want))
	}
	// A query asking for cursors on WebSocket pulls its pages there.
	ws.WriteJSON(msg{"id": "c", "op": "query", "attr": "uid", "eq": "pete", "k": 1000, "paging": "cursor"})
	m, _ := next()
	got := pidList(m["results"])
	for m["more"] == true {
		ws.WriteJSON(msg{"op": "page", "cursor": m["next"]})
		m, _ = next()
		if m["op"] != "page" || m["id"] != "c" {
			t.Fatalf("page over WebSocket: %v", brief(m))
		}
		got = append(got, pidList(m["results"])...)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("query over WebSocket with cursors: %d results", len(got))
	}
	ws.WriteJSON(msg{"id": "p", "op": "publish", "uid": "pete", "cell": pagedCell, "expires": "1h", "desc": "change?", "self_join": true})
	if got, _ := readPushedPages(t, next, "p", "published", "recent", defaultBudg); !slices.Equal(got, want) {
		t.Fatalf("recent: %d publications, not the cell's %d newest first", len(got), len(want))
	}
}
