package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/seed84792017/cellcast/broker"
	"github.com/seed84792017/cellcast/client"
	"github.com/seed84792017/cellcast/gateway"
)

// A reply over the budget arrives in pushed pages; Subscribe, Publish and
// Query return every publication, in order.
func TestPagedRepliesAreJoined(t *testing.T) {
	b := startWith(t, broker.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", Gateway: gateway.Limits{ReplyBudget: 2048}})
	defer b.Shutdown(context.Background())
	url := "ws://" + b.HTTPAddr() + "/ws"
	ctx := ctxT(t)
	c := dialT(t, url, "bob")
	var pids []string // newest first, as replies list them
	for i := range 40 {
		p, err := c.Publish(ctx, client.PublishRequest{Location: client.Cell("3.1"), Expires: time.Minute,
			Desc: fmt.Sprintf("%03d %s", i, strings.Repeat("x", 200)), Attrs: map[string]string{"category": "paged"}})
		if err != nil {
			t.Fatal(err)
		}
		pids = append([]string{p.Pid}, pids...)
	}
	same := func(what string, got []client.Publication) {
		t.Helper()
		if len(got) != len(pids) {
			t.Fatalf("%s: %d publications, want %d", what, len(got), len(pids))
		}
		for i, p := range got {
			if p.Pid != pids[i] {
				t.Fatalf("%s: publication %d is %s, want %s", what, i, p.Pid, pids[i])
			}
		}
	}
	sub, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Cell("3"), Past: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	same("past results", sub.Past)
	res, err := c.Query(ctx, client.QueryRequest{Attr: "category", Eq: "paged", K: 100})
	if err != nil {
		t.Fatal(err)
	}
	same("query", res.Publications)
	p, err := c.Publish(ctx, client.PublishRequest{Location: client.Cell("3.1"), SelfJoin: true, Desc: "latest"})
	if err != nil {
		t.Fatal(err)
	}
	same("recent", p.Recent)
}

// A query by place over the budget arrives in pages too, joined in order.
func TestPagedPlaceQuery(t *testing.T) {
	b := startWith(t, broker.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", Gateway: gateway.Limits{ReplyBudget: 2048}})
	defer b.Shutdown(context.Background())
	ctx := ctxT(t)
	c := dialT(t, "ws://"+b.HTTPAddr()+"/ws", "bob")
	var pids []string // newest first
	for i := range 40 {
		lat, lng := offset(louvreLat, louvreLng, float64(i*10), 0)
		p, err := c.Publish(ctx, client.PublishRequest{Location: client.Point(lat, lng), Expires: time.Minute,
			Desc: fmt.Sprintf("%03d %s", i, strings.Repeat("x", 200))})
		if err != nil {
			t.Fatal(err)
		}
		pids = append([]string{p.Pid}, pids...)
	}
	res, err := c.QueryPlace(ctx, client.PlaceQuery{Place: client.Circle(louvreLat, louvreLng, 1000), K: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range res.Publications {
		got = append(got, p.Pid)
	}
	if res.Count != len(pids) || res.Place != "near" || strings.Join(got, " ") != strings.Join(pids, " ") {
		t.Fatalf("%s: %d results %v, want %v", res.Place, res.Count, got, pids)
	}
}

// fakeBroker answers each request with the frames script returns.
func fakeBroker(t *testing.T, script func(req map[string]any) []string) string {
	t.Helper()
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			var req map[string]any
			if err := json.Unmarshal(data, &req); err != nil {
				t.Error(err)
				return
			}
			for _, f := range script(req) {
				if err := ws.WriteMessage(websocket.TextMessage, []byte(f)); err != nil {
					return
				}
			}
		}
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

const fakePub = `{"pid":"%s","uid":"bob","cell":"1","tp":"2026-11-21T10:32:12.1Z","expires_at":"2026-11-21T10:33:12Z"}`

// A reply that fell back to cursor mode is pulled page by page.
func TestCursorPagesArePulled(t *testing.T) {
	url := fakeBroker(t, func(req map[string]any) []string {
		id := req["id"]
		switch req["op"] {
		case "query":
			return []string{fmt.Sprintf(`{"id":%q,"op":"results","attr":"uid","count":3,"more":true,"pages":3,"next":"c.2","results":[`+fakePub+`]}`, id, "p1")}
		case "page":
			if req["cursor"] == "c.2" {
				return []string{fmt.Sprintf(`{"id":%q,"op":"page","of":"results","page":2,"more":true,"next":"c.3","results":[`+fakePub+`]}`, id, "p2")}
			}
			return []string{fmt.Sprintf(`{"id":%q,"op":"page","of":"results","page":3,"more":false,"results":[`+fakePub+`]}`, id, "p3")}
		}
		return nil
	})
	c := dialT(t, url, "alice")
	res, err := c.Query(ctxT(t), client.QueryRequest{Attr: "uid", Eq: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range res.Publications {
		got = append(got, p.Pid)
	}
	if fmt.Sprint(got) != "[p1 p2 p3]" || res.Count != 3 {
		t.Fatalf("got %v of %d", got, res.Count)
	}
}

// A notification at or below the last seq received is dropped, and one
// that the fast decoder does not take (escapes, another field order) is
// read all the same.
func TestNotificationsDedupedAndDecoded(t *testing.T) {
	url := fakeBroker(t, func(req map[string]any) []string {
		if req["op"] != "subscribe" {
			return nil
		}
		note := func(seq int, pid string) string {
			return fmt.Sprintf(`{"op":"notification","sid":"s-1","seq":%d,"publication":`+fakePub+`}`, seq, pid)
		}
		return []string{
			fmt.Sprintf(`{"id":%q,"op":"subscribed","sid":"s-1","cell":"1","ts":"2026-11-21T10:32:11Z","expires_at":"2099-01-01T00:00:00Z","live":true,"results":[]}`, req["id"]),
			note(5, "a"), note(5, "a"), note(3, "old"), note(9, "b"),
			`{ "seq": 12, "publication": {"desc":"say \"hi\"","pid":"c","tp":"2026-11-21T10:32:12Z","expires_at":"2026-11-21T10:33:12Z","attrs":{"k":"\u00e9"}}, "sid": "s-1", "op": "notification" }`,
		}
	})
	c := dialT(t, url, "alice")
	ctx := ctxT(t)
	sub, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Cell("1"), Future: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 3 {
		select {
		case n := <-sub.C:
			got = append(got, fmt.Sprint(n.Seq, n.Publication.Pid))
			if n.Seq == 12 && (n.Publication.Desc != `say "hi"` || n.Publication.Attrs["k"] != "é") {
				t.Fatalf("slow path: %+v", n.Publication)
			}
		case <-ctx.Done():
			t.Fatalf("got %v", got)
		}
	}
	if fmt.Sprint(got) != "[5a 9b 12c]" || c.Stats().Duplicates != 2 || sub.LastSeq() != 12 {
		t.Fatalf("got %v, stats %+v", got, c.Stats())
	}
}
