package broker

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/auth"
	"github.com/seed84792017/cellcast/gateway"
)

func natsDo(t *testing.T, nc *nats.Conn, subject string, body msg, header nats.Header) msg {
	t.Helper()
	data, _ := json.Marshal(body)
	m := &nats.Msg{Subject: subject, Data: data, Header: header}
	r, err := nc.RequestMsg(m, 5*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", subject, err)
	}
	var out msg
	if err := json.Unmarshal(r.Data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func nextMsg(t *testing.T, s *nats.Subscription) msg {
	t.Helper()
	m, err := s.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var out msg
	if err := json.Unmarshal(m.Data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// natsFlow subscribes over NATS, publishes on cellcast.pub.<cell> and over
// WebSocket, and checks the notifications on cellcast.notify.<uid>.
func natsFlow(t *testing.T, b *Broker, nc *nats.Conn) {
	notify, err := nc.SubscribeSync(gateway.SubjectNotify + ".carol")
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	pub := natsDo(t, nc, "cellcast.publish", msg{"uid": "p", "cell": "1.4", "expires": "1m", "desc": "before"}, nil)
	wantOp(t, pub, "published")
	s := natsDo(t, nc, "cellcast.subscribe", msg{"id": 7, "uid": "carol", "cell": "1.4.2", "past": "1m", "future": "1m"}, nil)
	wantOp(t, s, "subscribed")
	if s["id"] != 7.0 || len(results(s)) != 1 {
		t.Fatalf("subscribe over NATS: %v", s)
	}
	// A plain publish on the cell's subject, no reply wanted.
	data, _ := json.Marshal(msg{"uid": "p", "expires": "1m", "desc": "on the subject"})
	if err := nc.Publish("cellcast.pub.1.4.2.1", data); err != nil {
		t.Fatal(err)
	}
	n := nextMsg(t, notify)
	if n["sid"] != s["sid"] || n["publication"].(msg)["desc"] != "on the subject" || n["publication"].(msg)["cell"] != "1.4.2.1" {
		t.Fatalf("notification %v", n)
	}
	// From a WebSocket publisher to the NATS subscriber.
	ws := dial(t, b, wsHeader(b))
	ws.do(msg{"op": "publish", "uid": "p", "cell": "1.4.2", "expires": "1m", "desc": "from ws"})
	if n := nextMsg(t, notify); n["publication"].(msg)["desc"] != "from ws" {
		t.Fatalf("notification %v", n)
	}
	// Topic subjects.
	ts := natsDo(t, nc, "cellcast.subscribe", msg{"uid": "carol", "topic": "traffic/bronx", "future": "1m"}, nil)
	data, _ = json.Marshal(msg{"uid": "p", "expires": "1m"})
	nc.Publish("cellcast.pub.topic.traffic.bronx", data)
	if n := nextMsg(t, notify); n["sid"] != ts["sid"] || n["publication"].(msg)["topic"] != "traffic/bronx" {
		t.Fatalf("topic notification %v", n)
	}
	// Errors come back as error replies.
	if e := natsDo(t, nc, "cellcast.subscribe", msg{"uid": "carol", "cell": "x"}, nil); e["code"] != gateway.CodeBadRequest {
		t.Fatalf("bad cell over NATS: %v", e)
	}
	if e := natsDo(t, nc, "cellcast.subscribe", msg{"uid": "a.b", "cell": "1", "future": "1m"}, nil); e["code"] != gateway.CodeBadRequest {
		t.Fatalf("uid with a dot: %v", e)
	}
	if e := natsDo(t, nc, "cellcast.pub.1.4", msg{"uid": "p", "cell": "1.5"}, nil); e["code"] != gateway.CodeBadRequest {
		t.Fatalf("cell in both subject and body: %v", e)
	}
}

// wsHeader authenticates test WebSocket clients when the broker has auth.
var wsHeader = func(*Broker) http.Header { return nil }

func TestNATSEmbedded(t *testing.T) {
	b := start(t, Config{})
	nc, err := nats.Connect(b.NATSURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	natsFlow(t, b, nc)
}

func TestNATSExternalServer(t *testing.T) {
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		t.Skip("no nats-server binary in PATH (go install github.com/nats-io/nats-server/v2@v2.15.2)")
	}
	cmd := exec.Command(bin, "-a", "127.0.0.1", "-p", "14333")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Cleanups run last-in first-out: the broker stops before the server.
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url := "nats://127.0.0.1:14333"
	var nc *nats.Conn
	for i := 0; ; i++ {
		if nc, err = nats.Connect(url); err == nil {
			break
		}
		if i > 100 {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer nc.Close()
	b := start(t, Config{NATSURL: url})
	natsFlow(t, b, nc)
}

func TestAuth(t *testing.T) {
	secret := writeFile(t, "secret", "0123456789abcdef0123456789abcdef-test\n")
	tokens := writeFile(t, "tokens", "static-token-for-dave dave\n")
	b := start(t, Config{HMACSecretFile: secret, TokensFile: tokens})
	h, _ := LoadHMAC(secret)
	alice, _ := h.Sign("alice", time.Hour)
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }

	// WebSocket: no token, a bad token, a forged one are refused at the door.
	forged, _ := (&auth.HMAC{Secret: []byte("some other secret of enough length!")}).Sign("alice", time.Hour)
	for _, hdr := range []http.Header{nil, bearer("nope"), bearer(forged)} {
		if _, err := dialErr(b, hdr); err == nil || !strings.Contains(err.Error(), "401") {
			t.Fatalf("dial with %v: %v", hdr, err)
		}
	}
	a := dial(t, b, bearer(alice))
	s := a.do(msg{"op": "subscribe", "cell": "1.2", "future": "1m"})
	wantOp(t, s, "subscribed")
	if m := a.do(msg{"op": "subscribe", "uid": "bob", "cell": "1.2", "future": "1m"}); m["code"] != gateway.CodeForbidden {
		t.Fatalf("alice acting as bob: %v", m)
	}
	// The static token works too, in the query string as browsers send it.
	d, err := dialErr(b, nil)
	_ = d
	if err == nil {
		t.Fatal("dial without token accepted")
	}
	dave := dialURL(t, "ws://"+b.HTTPAddr()+"/ws?token=static-token-for-dave")
	if m := dave.do(msg{"op": "resume", "sid": s["sid"], "after": 0}); m["code"] != gateway.CodeForbidden {
		t.Fatalf("dave resuming alice's subscription: %v", m)
	}
	if m := dave.do(msg{"op": "unsubscribe", "sid": s["sid"]}); m["code"] != gateway.CodeForbidden {
		t.Fatalf("dave cancelling alice's subscription: %v", m)
	}
	p := dave.do(msg{"op": "publish", "cell": "1.2.3", "expires": "1m"})
	if n := a.wait(1); n[0]["publication"].(msg)["uid"] != "dave" || pidsOf(n)[0] != p["pid"] {
		t.Fatalf("alice got %v", n)
	}

	// NATS: the embedded server refuses clients without a valid token.
	if nc, err := nats.Connect(b.NATSURL()); err == nil {
		nc.Close()
		t.Fatal("NATS without a token accepted")
	}
	if nc, err := nats.Connect(b.NATSURL(), nats.Token(forged)); err == nil {
		nc.Close()
		t.Fatal("NATS with a forged token accepted")
	}
	nc, err := nats.Connect(b.NATSURL(), nats.Token(alice), nats.CustomInboxPrefix(gateway.InboxPrefix("alice")))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// Alice may not listen to dave's notifications.
	errs := make(chan error, 1)
	nc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err })
	nc.Subscribe(gateway.SubjectNotify+".dave", func(*nats.Msg) {})
	select {
	case err := <-errs:
		if !strings.Contains(strings.ToLower(err.Error()), "permission") {
			t.Fatalf("subscribing to dave's notifications: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("subscribing to dave's notifications was not refused")
	}
	// Requests carry the token in a header; the uid comes from it.
	mine, _ := nc.SubscribeSync(gateway.SubjectNotify + ".alice")
	hdr := nats.Header{"Authorization": {"Bearer " + alice}}
	ns := natsDo(t, nc, "cellcast.subscribe", msg{"cell": "1.9", "future": "1m"}, hdr)
	wantOp(t, ns, "subscribed")
	if e := natsDo(t, nc, "cellcast.subscribe", msg{"cell": "1.9", "future": "1m"}, nil); e["code"] != gateway.CodeUnauthorized {
		t.Fatalf("NATS request without a token: %v", e)
	}
	if e := natsDo(t, nc, "cellcast.subscribe", msg{"uid": "dave", "cell": "1.9", "future": "1m"}, hdr); e["code"] != gateway.CodeForbidden {
		t.Fatalf("NATS request acting as another: %v", e)
	}
	natsDo(t, nc, "cellcast.publish", msg{"cell": "1.9.1", "expires": "1m"}, hdr)
	if n := nextMsg(t, mine); n["sid"] != ns["sid"] {
		t.Fatalf("alice's NATS notification: %v", n)
	}
	// HTTP API: bearer required.
	resp, err := http.Post("http://"+b.HTTPAddr()+"/api/publish", "application/json", strings.NewReader(`{"cell":"1"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("HTTP without token: %d", resp.StatusCode)
	}
}

func dialURL(t *testing.T, url string) *client {
	t.Helper()
	ws, _, err := websocketDial(url)
	if err != nil {
		t.Fatal(err)
	}
	c := wrap(ws)
	c.t = t
	t.Cleanup(func() { ws.Close() })
	return c
}
