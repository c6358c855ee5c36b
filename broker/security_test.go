package broker

// The security suite (issue 13): one test per hole, each asserting the
// refusal and that nothing leaked or was stored. Helpers first.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/gorilla/websocket"
	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/auth"
	"github.com/seed84792017/cellcast/gateway"
	"github.com/seed84792017/cellcast/subscriptions"
)

const testSecret = "0123456789abcdef0123456789abcdef-security"

// secured starts a broker with an HMAC secret and a token file, and
// returns a minter of tokens for it.
func secured(t *testing.T, cfg Config) (*Broker, func(uid string, ttl time.Duration) string) {
	t.Helper()
	cfg.HMACSecretFile = writeFile(t, "secret", testSecret+"\n")
	if cfg.TokensFile == "" {
		cfg.TokensFile = writeFile(t, "tokens", "static-token-for-dave dave\n")
	}
	b := start(t, cfg)
	h := &auth.HMAC{Secret: []byte(testSecret), Issuer: cfg.AuthIssuer, Audience: cfg.AuthAudience}
	return b, func(uid string, ttl time.Duration) string {
		tok, err := h.Sign(uid, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
}

func bearer(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }

// storedPubs counts the live publications at, under or above cell, read
// from the store itself.
func storedPubs(t *testing.T, b *Broker, cell string) int {
	t.Helper()
	c, err := subscriptions.ParseCell(cell)
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Store().Subscribe(context.Background(), &subscriptions.SubscribeRequest{Uid: "auditor", Cell: c, Past: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return len(res.Past)
}

// storedSubs counts the live subscriptions a publication at cell would
// match, read from the store itself (the probe expires at once).
func storedSubs(t *testing.T, b *Broker, cell string) int {
	t.Helper()
	c, err := subscriptions.ParseCell(cell)
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Store().Publish(context.Background(), &subscriptions.PublishRequest{Uid: "auditor", Cell: c, Expires: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return len(res.Matches)
}

// natsErrs connects to url and collects the connection's async errors.
func natsErrs(t *testing.T, url string, opts ...nats.Option) (*nats.Conn, chan error) {
	t.Helper()
	errs := make(chan error, 16)
	opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case errs <- err:
		default:
		}
	}))
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc, errs
}

// wantPermissionError waits for the server to refuse a subscription.
func wantPermissionError(t *testing.T, errs chan error, what string) {
	t.Helper()
	select {
	case err := <-errs:
		if !strings.Contains(strings.ToLower(err.Error()), "permission") {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s was not refused", what)
	}
}

// silent checks that nothing arrives on s for a moment.
func silent(t *testing.T, s *nats.Subscription, what string) {
	t.Helper()
	if m, err := s.NextMsg(300 * time.Millisecond); err == nil {
		t.Fatalf("%s: got %s", what, m.Data)
	}
}

// TestSecurityInboxesArePrivate: on the embedded server a user may
// subscribe only to its own inbox, and the broker answers only there.
func TestSecurityInboxesArePrivate(t *testing.T) {
	b, mint := secured(t, Config{})
	alice, bob := mint("alice", time.Hour), mint("bob", time.Hour)
	bnc, berrs := natsErrs(t, b.NATSURL(), nats.Token(bob), nats.CustomInboxPrefix(gateway.InboxPrefix("bob")))
	for _, subj := range []string{"_INBOX.>", "_INBOX.alice.>", "_INBOX.*.x", gateway.SubjectNotify + ".>"} {
		bnc.Subscribe(subj, func(*nats.Msg) { t.Errorf("bob read %s", subj) })
		wantPermissionError(t, berrs, "bob subscribing to "+subj)
	}
	// Alice's reply reaches her, and nobody else could have listened.
	anc, _ := natsErrs(t, b.NATSURL(), nats.Token(alice), nats.CustomInboxPrefix(gateway.InboxPrefix("alice")))
	s := natsDo(t, anc, "cellcast.subscribe", msg{"cell": "1.3.1", "future": "1m"}, nats.Header{"Authorization": {"Bearer " + alice}})
	wantOp(t, s, "subscribed")
	// A request whose reply goes to the shared default inbox is refused:
	// no reply, nothing stored.
	dnc, _ := natsErrs(t, b.NATSURL(), nats.Token(bob))
	data, _ := json.Marshal(msg{"cell": "1.3.2", "future": "1m", "token": bob})
	if _, err := dnc.Request("cellcast.subscribe", data, 500*time.Millisecond); !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("request with the default inbox: %v", err)
	}
	if n := storedSubs(t, b, "1.3.2"); n != 0 {
		t.Fatalf("%d subscriptions stored from a refused request", n)
	}
}

// TestSecurityReplyInjection: a reply subject pointing at another user's
// notifications or inbox is refused and the request does not run.
func TestSecurityReplyInjection(t *testing.T) {
	b, mint := secured(t, Config{})
	alice, bob := mint("alice", time.Hour), mint("bob", time.Hour)
	anc, _ := natsErrs(t, b.NATSURL(), nats.Token(alice), nats.CustomInboxPrefix(gateway.InboxPrefix("alice")))
	notes, _ := anc.SubscribeSync(gateway.SubjectNotify + ".alice")
	inbox, _ := anc.SubscribeSync(gateway.InboxPrefix("alice") + ".>")
	anc.Flush()
	bnc, _ := natsErrs(t, b.NATSURL(), nats.Token(bob), nats.CustomInboxPrefix(gateway.InboxPrefix("bob")))
	for _, reply := range []string{gateway.SubjectNotify + ".alice", gateway.InboxPrefix("alice") + ".abc", "_INBOX.xyz"} {
		data, _ := json.Marshal(msg{"cell": "1.5.5", "expires": "1m", "desc": "injected", "token": bob})
		if err := bnc.PublishRequest("cellcast.publish", reply, data); err != nil {
			t.Fatal(err)
		}
	}
	bnc.Flush()
	silent(t, notes, "alice's notifications")
	silent(t, inbox, "alice's inbox")
	if n := storedPubs(t, b, "1.5.5"); n != 0 {
		t.Fatalf("%d publications stored by refused requests", n)
	}
	// Bob's own inbox works.
	p := natsDo(t, bnc, "cellcast.publish", msg{"cell": "1.5.5", "expires": "1m"}, nats.Header{"Authorization": {"Bearer " + bob}})
	wantOp(t, p, "published")
}

// externalNATS runs nats-server with a configuration, returning its port.
func externalNATS(t *testing.T, conf string) string {
	t.Helper()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		t.Skip("no nats-server binary in PATH (make tools)")
	}
	addr := freeAddr(t)
	path := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(path, []byte("listen: "+addr+"\n"+conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return addr
}

// waitNATS waits until url accepts the connection opts make.
func waitNATS(t *testing.T, url string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	for i := 0; ; i++ {
		nc, err := nats.Connect(url, opts...)
		if err == nil {
			t.Cleanup(nc.Close)
			return nc
		}
		if i > 100 {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// isolatingConf is what docs/security.md tells an operator to configure:
// the broker's user, and each user reading only its own subjects.
const isolatingConf = `authorization {
  users = [
    {user: broker, password: brokerpw, permissions: {publish: ["cellcast.>", "_INBOX.alice.>"], subscribe: ["cellcast.>"]}}
    {user: alice, password: alicepw, permissions: {publish: ["cellcast.>"], subscribe: ["_INBOX.alice.>", "cellcast.notify.alice"]}}
    {user: bob, password: bobpw, permissions: {publish: ["cellcast.>"], subscribe: ["_INBOX.bob.>", "cellcast.notify.bob"]}}
  ]
}
`

// TestSecurityExternalPermissionErrorDoesNotCrash: the broker's user may
// not publish to bob's inbox here (deliberately), so answering bob is a
// permission violation, which nats.go reports with a nil subscription.
// The broker lives on and serves the next request.
func TestSecurityExternalPermissionErrorDoesNotCrash(t *testing.T) {
	addr := externalNATS(t, isolatingConf)
	waitNATS(t, "nats://alice:alicepw@"+addr)
	// Started without NATSRequireIsolation: the start-up check finds the
	// missing _INBOX permission and only warns.
	b := start(t, Config{NATSURL: "nats://broker:brokerpw@" + addr})
	bnc, _ := natsErrs(t, "nats://bob:bobpw@"+addr, nats.CustomInboxPrefix(gateway.InboxPrefix("bob")))
	for i := 0; i < 3; i++ {
		data, _ := json.Marshal(msg{"uid": "bob", "cell": "1.7", "future": "1m"})
		if _, err := bnc.Request("cellcast.subscribe", data, 500*time.Millisecond); err == nil {
			t.Fatal("a reply reached bob through a subject the broker may not publish to")
		}
	}
	anc := waitNATS(t, "nats://alice:alicepw@"+addr, nats.CustomInboxPrefix(gateway.InboxPrefix("alice")))
	wantOp(t, natsDo(t, anc, "cellcast.publish", msg{"uid": "alice", "cell": "1.7.1", "expires": "1m"}, nil), "published")
	if code, _ := getStatus(t, "http://"+b.HTTPAddr()+"/readyz", nil); code != 200 {
		t.Fatalf("readyz after permission errors: %d", code)
	}
}

// TestSecurityExternalNATSPermissionsChecked: with isolation required,
// a broker whose own user may not answer in users' inboxes or subscribe
// to the request subjects refuses to start; given what docs/security.md
// lists, it starts.
func TestSecurityExternalNATSPermissionsChecked(t *testing.T) {
	addr := externalNATS(t, `authorization {
  users = [
    {user: noreply, password: pw, permissions: {publish: ["cellcast.>"], subscribe: ["cellcast.>"]}}
    {user: nosub, password: pw, permissions: {publish: ["cellcast.>", "_INBOX.>"], subscribe: ["cellcast.pub.>"]}}
    {user: broker, password: pw, permissions: {publish: ["cellcast.>", "_INBOX.>"], subscribe: ["cellcast.>"]}}
  ]
}
`)
	waitNATS(t, "nats://broker:pw@"+addr)
	for _, user := range []string{"noreply", "nosub"} {
		_, err := Start(Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", NATSURL: "nats://" + user + ":pw@" + addr, NATSRequireIsolation: true, Log: quietLog()})
		if err == nil || !errors.Is(err, nats.ErrPermissionViolation) {
			t.Fatalf("broker as %s: %v", user, err)
		}
	}
	start(t, Config{NATSURL: "nats://broker:pw@" + addr, NATSRequireIsolation: true})
}

// TestSecurityExternalNATSWithoutIsolation: an external server that lets
// anyone in and read every inbox is refused when isolation is required.
func TestSecurityExternalNATSWithoutIsolation(t *testing.T) {
	addr := externalNATS(t, "")
	waitNATS(t, "nats://"+addr)
	_, err := Start(Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", NATSURL: "nats://" + addr, NATSRequireIsolation: true, Log: quietLog()})
	if err == nil || !strings.Contains(err.Error(), "_INBOX.>") {
		t.Fatalf("Start against an open NATS server with isolation required: %v", err)
	}
}

func getStatus(t *testing.T, url string, h http.Header) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 512)
	n, _ := resp.Body.Read(buf)
	sb.Write(buf[:n])
	return resp.StatusCode, sb.String()
}

// TestSecurityActingAsAnotherUID: on every transport, a request naming
// another uid than the token's is forbidden and stores nothing.
func TestSecurityActingAsAnotherUID(t *testing.T) {
	b, mint := secured(t, Config{})
	alice := mint("alice", time.Hour)
	ws := dial(t, b, bearer(alice))
	if m := ws.do(msg{"op": "publish", "uid": "bob", "cell": "1.8", "expires": "1m"}); m["code"] != gateway.CodeForbidden {
		t.Fatalf("WebSocket: %v", m)
	}
	req, _ := http.NewRequest("POST", "http://"+b.HTTPAddr()+"/api/subscribe", strings.NewReader(`{"uid":"bob","cell":"1.8","future":"1m"}`))
	req.Header.Set("Authorization", "Bearer "+alice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("HTTP: %d", resp.StatusCode)
	}
	nc, _ := natsErrs(t, b.NATSURL(), nats.Token(alice), nats.CustomInboxPrefix(gateway.InboxPrefix("alice")))
	if m := natsDo(t, nc, "cellcast.publish", msg{"uid": "bob", "cell": "1.8", "expires": "1m"}, nats.Header(bearer(alice))); m["code"] != gateway.CodeForbidden {
		t.Fatalf("NATS: %v", m)
	}
	// Dave's static token on NATS as the token field, acting as alice.
	dnc, _ := natsErrs(t, b.NATSURL(), nats.Token("static-token-for-dave"), nats.CustomInboxPrefix(gateway.InboxPrefix("dave")))
	if m := natsDo(t, dnc, "cellcast.subscribe", msg{"uid": "alice", "cell": "1.8", "future": "1m", "token": "static-token-for-dave"}, nil); m["code"] != gateway.CodeForbidden {
		t.Fatalf("NATS with dave's token as alice: %v", m)
	}
	if p, s := storedPubs(t, b, "1.8"), storedSubs(t, b, "1.8"); p != 0 || s != 0 {
		t.Fatalf("stored %d publications, %d subscriptions", p, s)
	}
}

// mintClaims signs arbitrary claims (or none at all with alg none).
func mintClaims(t *testing.T, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestSecurityBadTokens: alg none, a wrong key, an expired token, a
// future nbf, no exp, a wrong issuer or audience are refused on every
// transport, and nothing is stored.
func TestSecurityBadTokens(t *testing.T) {
	b, _ := secured(t, Config{AuthIssuer: "cellcast-test", AuthAudience: "brokers"})
	now := time.Now()
	good := func() jwt.MapClaims {
		return jwt.MapClaims{"sub": "mallory", "exp": now.Add(time.Hour).Unix(), "iss": "cellcast-test", "aud": "brokers"}
	}
	with := func(k string, v any) jwt.MapClaims {
		c := good()
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	key := []byte(testSecret)
	bad := map[string]string{
		"alg none":       mintClaims(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, good()),
		"wrong key":      mintClaims(t, jwt.SigningMethodHS256, []byte("another secret, quite long enough!!"), good()),
		"HS512":          mintClaims(t, jwt.SigningMethodHS512, key, good()),
		"expired":        mintClaims(t, jwt.SigningMethodHS256, key, with("exp", now.Add(-time.Minute).Unix())),
		"nbf in future":  mintClaims(t, jwt.SigningMethodHS256, key, with("nbf", now.Add(time.Minute).Unix())),
		"no exp":         mintClaims(t, jwt.SigningMethodHS256, key, with("exp", nil)),
		"wrong issuer":   mintClaims(t, jwt.SigningMethodHS256, key, with("iss", "elsewhere")),
		"wrong audience": mintClaims(t, jwt.SigningMethodHS256, key, with("aud", "others")),
	}
	for name, tok := range bad {
		if _, err := dialErr(b, bearer(tok)); err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("%s: WebSocket: %v", name, err)
		}
		req, _ := http.NewRequest("POST", "http://"+b.HTTPAddr()+"/api/publish", strings.NewReader(`{"cell":"1.9","expires":"1m"}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: HTTP: %v %v", name, resp, err)
		} else {
			resp.Body.Close()
		}
		if nc, err := nats.Connect(b.NATSURL(), nats.Token(tok)); err == nil {
			nc.Close()
			t.Errorf("%s: NATS connection accepted", name)
		}
	}
	// The same claims, well formed, pass: the refusals were for the flaws.
	ok := mintClaims(t, jwt.SigningMethodHS256, key, good())
	wantOp(t, dial(t, b, bearer(ok)).do(msg{"op": "publish", "cell": "1.9", "expires": "1m"}), "published")
	if n := storedPubs(t, b, "1.9"); n != 1 {
		t.Fatalf("%d publications stored, want only the good token's", n)
	}
}

// TestSecurityTokenExpiryClosesConnections: a WebSocket and a NATS
// connection end when their token expires, and hear nothing after.
func TestSecurityTokenExpiryClosesConnections(t *testing.T) {
	b, mint := secured(t, Config{})
	short := mint("erin", 2*time.Second) // exp has whole seconds: 1-2 s
	ws := dial(t, b, bearer(short))
	wantOp(t, ws.do(msg{"op": "subscribe", "cell": "1.11", "future": "1m"}), "subscribed")
	nc, _ := natsErrs(t, b.NATSURL(), nats.Token(short), nats.CustomInboxPrefix(gateway.InboxPrefix("erin")), nats.NoReconnect())
	notes, _ := nc.SubscribeSync(gateway.SubjectNotify + ".erin")
	nc.Flush()
	// The WebSocket closes with a policy close frame.
	select {
	case <-ws.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the WebSocket outlived its token")
	}
	var ce *websocket.CloseError
	if !errors.As(ws.err, &ce) || ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, "expired") {
		t.Fatalf("WebSocket ended with %v", ws.err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !nc.IsClosed() {
		if time.Now().After(deadline) {
			t.Fatal("the NATS connection outlived its token")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// What is published now reaches neither.
	other := dial(t, b, bearer(mint("frank", time.Hour)))
	wantOp(t, other.do(msg{"op": "publish", "cell": "1.11", "expires": "1m"}), "published")
	if m, err := notes.NextMsg(300 * time.Millisecond); err == nil {
		t.Fatalf("the closed NATS connection got %s", m.Data)
	}
	// And the expired token opens nothing new.
	if _, err := dialErr(b, bearer(short)); err == nil {
		t.Fatal("an expired token opened a WebSocket")
	}
	if nc, err := nats.Connect(b.NATSURL(), nats.Token(short)); err == nil {
		nc.Close()
		t.Fatal("an expired token opened a NATS connection")
	}
}

// TestSecurityReloadRevokes: a token removed from the file and reloaded
// (SIGHUP) closes its WebSocket and NATS connections and opens no more.
func TestSecurityReloadRevokes(t *testing.T) {
	tokens := writeFile(t, "tokens", "static-token-for-dave dave\nstatic-token-for-gwen gwen\n")
	b, _ := secured(t, Config{TokensFile: tokens})
	ws := dial(t, b, bearer("static-token-for-dave"))
	keep := dial(t, b, bearer("static-token-for-gwen"))
	nc, _ := natsErrs(t, b.NATSURL(), nats.Token("static-token-for-dave"), nats.MaxReconnects(2), nats.ReconnectWait(50*time.Millisecond))
	if err := os.WriteFile(tokens, []byte("static-token-for-gwen gwen\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.Reload(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ws.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the revoked token's WebSocket stays open")
	}
	var ce *websocket.CloseError
	if !errors.As(ws.err, &ce) || ce.Code != websocket.ClosePolicyViolation {
		t.Fatalf("WebSocket ended with %v", ws.err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !nc.IsClosed() {
		if time.Now().After(deadline) {
			t.Fatal("the revoked token's NATS connection stays open")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := dialErr(b, bearer("static-token-for-dave")); err == nil {
		t.Fatal("a revoked token opened a WebSocket")
	}
	wantOp(t, keep.do(msg{"op": "publish", "cell": "1.12", "expires": "1m"}), "published")
	// A broken file keeps the old tokens.
	os.WriteFile(tokens, []byte("short gwen\n"), 0o600)
	if err := b.Reload(); err == nil {
		t.Fatal("a broken token file reloaded")
	}
	wantOp(t, keep.do(msg{"op": "publish", "cell": "1.12", "expires": "1m"}), "published")
}

// TestSecurityReloadRotatesSecret: a new HMAC secret, reloaded, retires
// every JWT signed with the old one, live connections included.
func TestSecurityReloadRotatesSecret(t *testing.T) {
	b, mint := secured(t, Config{})
	ws := dial(t, b, bearer(mint("hal", time.Hour)))
	os.WriteFile(b.cfg.HMACSecretFile, []byte("a brand new secret, at least 32 bytes long\n"), 0o600)
	if err := b.Reload(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ws.done:
	case <-time.After(10 * time.Second):
		t.Fatal("a WebSocket with a retired JWT stays open")
	}
	if _, err := dialErr(b, bearer(mint("hal", time.Hour))); err == nil {
		t.Fatal("a JWT under the old secret opened a WebSocket")
	}
	fresh, _ := (&auth.HMAC{Secret: []byte("a brand new secret, at least 32 bytes long")}).Sign("hal", time.Hour)
	wantOp(t, dial(t, b, bearer(fresh)).do(msg{"op": "publish", "cell": "1.12", "expires": "1m"}), "published")
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
