package broker

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/gateway"
)

// TestQueryOverEveryTransport: the latest K publications by publisher,
// category and creation time, over WebSocket, HTTP and NATS, newest first,
// without expired ones, across a restart; bad queries get bad_request and
// the connection lives on.
func TestQueryOverEveryTransport(t *testing.T) {
	dir := t.TempDir()
	b := start(t, Config{DataDir: dir})
	c := dial(t, b, nil)
	var pids []string // alice's, oldest first
	var floods []string
	for i := range 12 {
		uid, cat := "alice", "flood"
		if i%3 == 2 {
			uid, cat = "bob", "fire"
		}
		p := c.do(msg{"op": "publish", "uid": uid, "cell": "1.2.3", "expires": "10m", "desc": "incident", "attrs": msg{"category": cat, "severity": "high"}})
		wantOp(t, p, "published")
		if uid == "alice" {
			pids = append(pids, p["pid"].(string))
		}
		if cat == "flood" {
			floods = append(floods, p["pid"].(string))
		}
	}
	// One that expires at once never shows, nor one with no lifetime.
	short := c.do(msg{"op": "publish", "uid": "alice", "cell": "1.2", "expires": "1ms", "attrs": msg{"category": "flood"}})
	wantOp(t, short, "published")
	wantOp(t, c.do(msg{"op": "publish", "uid": "alice", "cell": "1.2", "attrs": msg{"category": "flood"}}), "published")
	time.Sleep(5 * time.Millisecond)
	newest := func(ps []string, k int) []string {
		out := slices.Clone(ps)
		slices.Reverse(out)
		return out[:min(k, len(out))]
	}

	q := c.do(msg{"op": "query", "attr": "uid", "eq": "alice", "k": 3})
	wantOp(t, q, "results")
	if got := pidsOf(results(q)); !slices.Equal(got, newest(pids, 3)) || q["count"] != 3.0 {
		t.Fatalf("latest 3 of alice: %v, want %v", got, newest(pids, 3))
	}
	r := results(q)[0]
	if r["uid"] != "alice" || r["desc"] != "incident" || r["attrs"].(msg)["severity"] != "high" || r["cell"] != "1.2.3" {
		t.Fatalf("a result lacks the publication's fields: %v", r)
	}
	if got := pidsOf(results(c.do(msg{"op": "query", "attr": "category", "eq": "flood", "k": 100}))); !slices.Equal(got, newest(floods, 100)) {
		t.Fatalf("floods: %v, want %v", got, newest(floods, 100))
	}
	// A time range: from the 2nd of alice's publications to the 4th.
	tp := func(pid string) string {
		v := c.do(msg{"op": "query", "attr": "uid", "eq": "alice", "k": 100})
		for _, r := range results(v) {
			if r["pid"] == pid {
				return r["tp"].(string)
			}
		}
		t.Fatalf("%s not found", pid)
		return ""
	}
	from, to := tp(pids[1]), tp(pids[3])
	rq := c.do(msg{"op": "query", "attr": "tp", "from": from, "to": to, "k": 10})
	if got := pidsOf(results(rq)); len(got) < 3 || got[0] != pids[3] || got[len(got)-1] != pids[1] {
		t.Fatalf("tp in [%s, %s]: %v", from, to, got)
	}

	// Bad queries: an error frame each, and the connection serves on.
	for _, bad := range []msg{
		{"op": "query", "attr": "color", "eq": "red"},
		{"op": "query", "attr": "uid"},
		{"op": "query", "attr": "uid", "eq": "alice", "k": 0},
		{"op": "query", "attr": "uid", "eq": "alice", "k": 5000},
		{"op": "query", "attr": "tp", "from": to, "to": from},
		{"op": "query", "attr": "tp", "eq": "yesterday"},
		{"op": "query", "attr": "uid", "eq": "alice", "from": "a", "to": "b"},
	} {
		e := c.do(bad)
		if e["op"] != "error" || e["code"] != gateway.CodeBadRequest || e["message"] == "" {
			t.Fatalf("%v: %v, want a bad_request error", bad, e)
		}
	}

	// HTTP: the same query, the same answer; a bad one is a 400.
	post := func(body string) (int, msg) { return postAPI(t, b, "query", body) }
	code, h := post(`{"attr":"uid","eq":"alice","k":3}`)
	if code != 200 || !slices.Equal(pidsOf(results(h)), newest(pids, 3)) {
		t.Fatalf("HTTP query: %d %v", code, h)
	}
	if code, h := post(`{"attr":"nope","eq":"x"}`); code != 400 || h["code"] != gateway.CodeBadRequest {
		t.Fatalf("HTTP bad query: %d %v", code, h)
	}

	// NATS: a request on cellcast.query.
	nc, err := nats.Connect(b.NATSURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	n := natsDo(t, nc, gateway.SubjectPrefix+"query", msg{"attr": "uid", "eq": "bob", "k": 2}, nil)
	if got := results(n); len(got) != 2 || got[0]["uid"] != "bob" {
		t.Fatalf("NATS query: %v", n)
	}

	// After a restart the catalog answers the same.
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b2 := start(t, Config{DataDir: dir})
	c2 := dial(t, b2, nil)
	if got := pidsOf(results(c2.do(msg{"op": "query", "attr": "uid", "eq": "alice", "k": 100}))); !slices.Equal(got, newest(pids, 100)) {
		t.Fatalf("after restart: %v, want %v", got, newest(pids, 100))
	}
}

// TestQueryIndexesFromConfig: the strategy per attribute comes from the
// config; a bad list stops the broker from starting, and "none" turns
// queries off with a clear error.
func TestQueryIndexesFromConfig(t *testing.T) {
	for _, strategy := range []string{"embedded", "eager", "lazy", "composite", "deli", "bloom-hierarchy"} {
		b := start(t, Config{Indexes: "uid=" + strategy + ",region=" + strategy})
		c := dial(t, b, nil)
		for i := range 5 {
			c.do(msg{"op": "publish", "uid": "u", "cell": "1.4", "expires": "1m", "attrs": msg{"region": []string{"north", "south"}[i%2]}})
		}
		if got := results(c.do(msg{"op": "query", "attr": "region", "eq": "north", "k": 10})); len(got) != 3 {
			t.Fatalf("%s: %d results for region=north, want 3", strategy, len(got))
		}
		if e := c.do(msg{"op": "query", "attr": "category", "eq": "x"}); e["code"] != gateway.CodeBadRequest || !strings.Contains(e["message"].(string), "region, uid") {
			t.Fatalf("%s: query on an attribute not indexed: %v", strategy, e)
		}
	}
	for _, bad := range []string{"uid=fastest", "uid", "expires=lazy"} {
		cfg := Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", NATSListen: "127.0.0.1:0", Indexes: bad}
		if b, err := Start(cfg); err == nil || !strings.Contains(err.Error(), "--index") {
			if b != nil {
				b.Shutdown(context.Background())
			}
			t.Fatalf("index list %q: %v", bad, err)
		}
	}
	b := start(t, Config{Indexes: "none"})
	if e := dial(t, b, nil).do(msg{"op": "query", "attr": "uid", "eq": "u"}); e["code"] != gateway.CodeBadRequest {
		t.Fatalf("query without a catalog: %v", e)
	}
}
