package broker

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/gateway"
)

// postAs posts body to /api/<op> with a bearer token.
func postAs(t *testing.T, b *Broker, tok, op, body string) (int, msg) {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+b.HTTPAddr()+"/api/"+op, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
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

func wantLimit(t *testing.T, m msg, code, limit, what string) {
	t.Helper()
	if m["code"] != code || m["limit"] != limit {
		t.Fatalf("%s: got %v, want %s naming %s", what, m, code, limit)
	}
}

// TestSecurityTopicFlood: a user creates new topics only at its rate, the
// registry only up to its cap, and a refused request registers nothing.
func TestSecurityTopicFlood(t *testing.T) {
	b, mint := secured(t, Config{Gateway: gateway.Limits{UserNewTopics: 5, MaxTopics: 8}})
	topics := b.Store().Topics()
	ws := dial(t, b, bearer(mint("mallory", time.Hour)))
	// A request refused for anything else registers no topic.
	for _, m := range []msg{
		{"op": "subscribe", "topic": "bad/past", "past": "25h"},
		{"op": "subscribe", "topic": "bad/future", "future": "-1m"},
		{"op": "publish", "topic": "bad/expires", "expires": "48h"},
		{"op": "publish", "topic": "bad/desc", "expires": "1m", "desc": strings.Repeat("x", 5000)},
	} {
		if r := ws.do(m); r["code"] != gateway.CodeBadRequest {
			t.Fatalf("%v: %v", m, r)
		}
	}
	if n := topics.Len(); n != 0 {
		t.Fatalf("refused requests registered %d topics", n)
	}
	// Five new topics a minute: the sixth is refused, naming the limit.
	for i := 0; i < 5; i++ {
		wantOp(t, ws.do(msg{"op": "publish", "topic": fmt.Sprint("t", i), "expires": "1m"}), "published")
	}
	r := ws.do(msg{"op": "publish", "topic": "t5", "expires": "1m"})
	wantLimit(t, r, gateway.CodeOverloaded, gateway.LimitUserNewTopics, "sixth new topic")
	if r["retry_after_ms"] == nil {
		t.Fatalf("no retry hint: %v", r)
	}
	// Known topics stay usable.
	wantOp(t, ws.do(msg{"op": "publish", "topic": "t1", "expires": "1m"}), "published")
	// Over HTTP, another user fills the registry to its cap of 8.
	tok := mint("trent", time.Hour)
	for i := 0; i < 3; i++ {
		if code, m := postAs(t, b, tok, "publish", fmt.Sprintf(`{"topic":"u%d","expires":"1m"}`, i)); code != 200 {
			t.Fatalf("topic u%d: %d %v", i, code, m)
		}
	}
	code, m := postAs(t, b, tok, "subscribe", `{"topic":"u3","future":"1m"}`)
	if code != http.StatusBadRequest && code != http.StatusTooManyRequests {
		t.Fatalf("status %d", code)
	}
	wantLimit(t, m, gateway.CodeTooMany, gateway.LimitTopics, "topic over the cap")
	if n := topics.Len(); n != 8 {
		t.Fatalf("%d topics, want the cap of 8", n)
	}
	if _, ok := topics.Lookup("t5"); ok {
		t.Fatal("the refused topic was registered")
	}
}

// TestSecuritySubscriptionFloodHTTPAndNATS: the live subscriptions of one
// user are capped across HTTP and NATS (and WebSocket) together.
func TestSecuritySubscriptionFloodHTTPAndNATS(t *testing.T) {
	b, mint := secured(t, Config{Gateway: gateway.Limits{UserSubscriptions: 3}})
	tok := mint("sybil", time.Hour)
	for i := 0; i < 2; i++ {
		if code, m := postAs(t, b, tok, "subscribe", `{"cell":"1.13","future":"1m"}`); code != 200 {
			t.Fatalf("HTTP subscription %d: %d %v", i, code, m)
		}
	}
	nc, _ := natsErrs(t, b.NATSURL(), nats.Token(tok), nats.CustomInboxPrefix(gateway.InboxPrefix("sybil")))
	hdr := nats.Header(bearer(tok))
	third := natsDo(t, nc, "cellcast.subscribe", msg{"cell": "1.13", "future": "1m"}, hdr)
	wantOp(t, third, "subscribed")
	wantLimit(t, natsDo(t, nc, "cellcast.subscribe", msg{"cell": "1.13", "future": "1m"}, hdr), gateway.CodeTooMany, gateway.LimitUserSubscriptions, "fourth over NATS")
	code, m := postAs(t, b, tok, "subscribe", `{"cell":"1.13","future":"1m"}`)
	if code == 200 {
		t.Fatalf("fourth over HTTP: %v", m)
	}
	wantLimit(t, m, gateway.CodeTooMany, gateway.LimitUserSubscriptions, "fourth over HTTP")
	ws := dial(t, b, bearer(tok))
	wantLimit(t, ws.do(msg{"op": "subscribe", "cell": "1.13", "future": "1m"}), gateway.CodeTooMany, gateway.LimitUserSubscriptions, "fourth over WebSocket")
	if n := storedSubs(t, b, "1.13"); n != 3 {
		t.Fatalf("%d subscriptions stored, want 3", n)
	}
	// Another user is not affected; an unsubscribe frees a slot.
	wantOp(t, dial(t, b, bearer(mint("other", time.Hour))).do(msg{"op": "subscribe", "cell": "1.13", "future": "1m"}), "subscribed")
	wantOp(t, natsDo(t, nc, "cellcast.unsubscribe", msg{"sid": third["sid"]}, hdr), "unsubscribed")
	wantOp(t, natsDo(t, nc, "cellcast.subscribe", msg{"cell": "1.14", "future": "1m"}, hdr), "subscribed")
	wantLimit(t, natsDo(t, nc, "cellcast.subscribe", msg{"cell": "1.14", "future": "1m"}, hdr), gateway.CodeTooMany, gateway.LimitUserSubscriptions, "full again")
}

// TestSecurityUserRateAndConnections: a user's request rate holds across
// transports, and its WebSocket connections are capped.
func TestSecurityUserRateAndConnections(t *testing.T) {
	b, mint := secured(t, Config{Gateway: gateway.Limits{UserRate: 0.5, UserBurst: 2, UserConnections: 2}})
	tok := mint("rita", time.Hour)
	ws := dial(t, b, bearer(tok))
	wantOp(t, ws.do(msg{"op": "publish", "cell": "1.15", "expires": "1m"}), "published")
	if code, m := postAs(t, b, tok, "publish", `{"cell":"1.15","expires":"1m"}`); code != 200 {
		t.Fatalf("second request: %d %v", code, m)
	}
	nc, _ := natsErrs(t, b.NATSURL(), nats.Token(tok), nats.CustomInboxPrefix(gateway.InboxPrefix("rita")))
	r := natsDo(t, nc, "cellcast.publish", msg{"cell": "1.15", "expires": "1m"}, nats.Header(bearer(tok)))
	wantLimit(t, r, gateway.CodeOverloaded, gateway.LimitUserRate, "third request, over NATS")
	if n := storedPubs(t, b, "1.15"); n != 2 {
		t.Fatalf("%d publications stored, want 2", n)
	}
	dial(t, b, bearer(tok))
	if _, err := dialErr(b, bearer(tok)); err == nil || !strings.Contains(err.Error(), "429") || !strings.Contains(err.Error(), gateway.LimitUserConnections) {
		t.Fatalf("third connection: %v", err)
	}
	// On the embedded NATS server, counted apart: one is open already.
	natsErrs(t, b.NATSURL(), nats.Token(tok))
	if nc, err := nats.Connect(b.NATSURL(), nats.Token(tok)); err == nil {
		nc.Close()
		t.Fatal("a third NATS connection accepted")
	}
}
