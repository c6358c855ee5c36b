package broker

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/gateway"
	"github.com/seed84792017/cellcast/lsm/vfs"
)

// closedByServer reads c until the broker closes it, failing if it is
// still open after wait.
func closedByServer(t *testing.T, c net.Conn, wait time.Duration, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(wait))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: still open after %v", what, wait)
	}
}

// TestSecuritySlowloris: connections that trickle headers, trickle a body
// or idle between requests are closed by the broker's timeouts, and a
// normal client is served within a second meanwhile.
func TestSecuritySlowloris(t *testing.T) {
	b := start(t, Config{HTTP: HTTPLimits{ReadHeaderTimeout: 300 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, IdleTimeout: 300 * time.Millisecond}})
	var slow []net.Conn
	for i := 0; i < 200; i++ {
		c, err := net.Dial("tcp", b.HTTPAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		switch i % 3 {
		case 0: // headers never end
			fmt.Fprintf(c, "POST /api/publish HTTP/1.1\r\nHost: x\r\nX-Slow: ")
		case 1: // a body that never comes
			fmt.Fprintf(c, "POST /api/publish HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
		case 2: // one request, then idle on keep-alive
			fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		}
		slow = append(slow, c)
	}
	t0 := time.Now()
	if code, m := postAPI(t, b, "publish", `{"uid":"p","cell":"1.17","expires":"1m"}`); code != 200 {
		t.Fatalf("normal client: %d %v", code, m)
	}
	ws := dial(t, b, nil)
	wantOp(t, ws.do(msg{"op": "publish", "uid": "p", "cell": "1.17", "expires": "1m"}), "published")
	if d := time.Since(t0); d > time.Second {
		t.Fatalf("a normal client took %v among slowloris connections", d)
	}
	for i, c := range slow {
		closedByServer(t, c, 10*time.Second, fmt.Sprintf("slow connection %d", i))
	}
	// The WebSocket, upgraded, has its own deadlines and lives on.
	wantOp(t, ws.do(msg{"op": "publish", "uid": "p", "cell": "1.17", "expires": "1m"}), "published")
}

// TestSecurityConnectionCap: past the cap a connection is closed at once,
// and a freed slot serves again.
func TestSecurityConnectionCap(t *testing.T) {
	b := start(t, Config{HTTP: HTTPLimits{MaxConns: 5}})
	var held []net.Conn
	for i := 0; i < 5; i++ {
		c, err := net.Dial("tcp", b.HTTPAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	over, err := net.Dial("tcp", b.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	closedByServer(t, over, 5*time.Second, "the connection over the cap")
	held[0].Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + b.HTTPAddr() + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a freed slot does not serve: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// WebSockets hold their slot while open, and free it when they end.
	for _, c := range held[1:] {
		c.Close()
	}
	var wss []*client
	for len(wss) < 5 {
		if c, err := dialErr(b, nil); err == nil {
			wss = append(wss, c)
		} else if time.Now().After(deadline) {
			t.Fatalf("WebSocket %d: %v", len(wss), err)
		} else {
			time.Sleep(20 * time.Millisecond) // a closed slot frees once the broker sees the close
		}
	}
	if c, err := dialErr(b, nil); err == nil {
		c.ws.Close()
		t.Fatal("a sixth connection past the cap")
	}
	for _, c := range wss {
		c.ws.Close()
	}
	for deadline = time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := dialErr(b, nil); err == nil {
			c.ws.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("closed WebSockets keep their slots")
		}
	}
}

// TestSecurityHungUpHTTPPublish: a publish whose client hangs up right
// after sending it is either not stored, or stored and pushed to the live
// subscriber: never stored and silent.
func TestSecurityHungUpHTTPPublish(t *testing.T) {
	// Slow fsyncs keep each publish waiting for the disk while its client
	// hangs up, so the request's context is cancelled mid-write.
	slow := vfs.Inject(vfs.Default, func(op vfs.Op, _ string) error {
		if op == vfs.OpSync {
			time.Sleep(20 * time.Millisecond)
		}
		return nil
	})
	b := start(t, Config{FS: slow})
	ws := dial(t, b, nil)
	wantOp(t, ws.do(msg{"op": "subscribe", "uid": "s", "cell": "1.18", "future": "1m"}), "subscribed")
	const n = 40
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", b.HTTPAddr())
		if err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf(`{"uid":"p","cell":"1.18.1","expires":"1m","desc":"hung-up %d"}`, i)
		fmt.Fprintf(c, "POST /api/publish HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		c.Close()
	}
	// Wait for the broker to settle: every request answered or dropped.
	var stored int
	for i, last := 0, -1; ; i++ {
		time.Sleep(200 * time.Millisecond)
		stored = storedPubs(t, b, "1.18.1")
		if stored == last && b.svc.Stats().Waiting == 0 {
			break
		}
		if i > 100 {
			t.Fatal("the hung-up publishes never settled")
		}
		last = stored
	}
	notes := ws.wait(stored)
	want := map[string]bool{}
	for _, p := range notes {
		want[p["publication"].(msg)["desc"].(string)] = true
	}
	if len(want) != stored {
		t.Fatalf("%d stored, %d distinct notified", stored, len(want))
	}
	ws.quiet()
	t.Logf("%d of %d hung-up publishes stored, all pushed", stored, n)
}

// TestSecurityControlFramesThroughTheWriter: a message over the read limit
// and a protocol error close the connection with the writer's close frame
// (1009, 1002, each with a reason); gorilla/websocket's own frame (1009
// with no reason), written beside the writer, is what this rules out.
func TestSecurityControlFramesThroughTheWriter(t *testing.T) {
	b := start(t, Config{Gateway: gateway.Limits{MaxFrame: 1024}})
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+b.HTTPAddr()+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.WriteMessage(websocket.TextMessage, []byte(strings.Repeat(" ", 20<<10)))
	_, _, err = ws.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseMessageTooBig || !strings.Contains(ce.Text, "16384") {
		t.Fatalf("over the read limit: %v", err)
	}
	ws2, _, err := websocket.DefaultDialer.Dial("ws://"+b.HTTPAddr()+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws2.Close()
	// A masked, final frame with the reserved opcode 3.
	ws2.UnderlyingConn().Write([]byte{0x83, 0x80, 1, 2, 3, 4})
	_, _, err = ws2.ReadMessage()
	if !errors.As(err, &ce) || ce.Code != websocket.CloseProtocolError || !strings.Contains(ce.Text, "opcode") {
		t.Fatalf("reserved opcode: %v", err)
	}
}

// selfSigned writes a certificate and key for 127.0.0.1 and returns their
// paths and a pool that trusts them.
func selfSigned(t *testing.T) (cert, key string, pool *x509.CertPool) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cellcast-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(k)
	cert = writeFile(t, "cert.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	key = writeFile(t, "key.pem", string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})))
	c, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(c)
	return cert, key, pool
}

// TestSecurityTLS: HTTP, WebSocket and the embedded NATS server speak TLS
// and refuse clear text.
func TestSecurityTLS(t *testing.T) {
	cert, key, pool := selfSigned(t)
	b, mint := secured(t, Config{TLSCert: cert, TLSKey: key})
	tok := mint("tess", time.Hour)
	tc := &tls.Config{RootCAs: pool}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
	resp, err := hc.Get("https://" + b.HTTPAddr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	d := websocket.Dialer{TLSClientConfig: tc}
	ws, _, err := d.Dial("wss://"+b.HTTPAddr()+"/ws", bearer(tok))
	if err != nil {
		t.Fatal(err)
	}
	c := wrap(ws)
	c.t = t
	defer ws.Close()
	wantOp(t, c.do(msg{"op": "publish", "cell": "1.19", "expires": "1m"}), "published")
	// Clear text is refused: the bearer token never crosses it.
	if resp, err := http.Post("http://"+b.HTTPAddr()+"/api/publish", "application/json", strings.NewReader(`{"cell":"1.19","expires":"1m"}`)); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("a clear-text request served")
		}
	}
	nc, err := nats.Connect(b.NATSURL(), nats.Token(tok), nats.Secure(tc), nats.CustomInboxPrefix(gateway.InboxPrefix("tess")))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if !nc.TLSRequired() {
		t.Fatal("the embedded NATS server does not require TLS")
	}
	wantOp(t, natsDo(t, nc, "cellcast.publish", msg{"cell": "1.19", "expires": "1m"}, nats.Header(bearer(tok))), "published")
	raw, err := net.Dial("tcp", b.NATSURL()[strings.Index(b.NATSURL(), "://")+3:])
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	line, _ := bufio.NewReader(raw).ReadString('\n')
	if !strings.Contains(line, `"tls_required":true`) {
		t.Fatalf("NATS INFO: %s", line)
	}
	if n := storedPubs(t, b, "1.19"); n != 2 {
		t.Fatalf("%d publications, want the 2 sent over TLS", n)
	}
}

// TestSecurityMetricsNotExposed: /metrics moves to its own listener, or
// needs a token, and is not served on a non-loopback HTTP address without
// one.
func TestSecurityMetricsNotExposed(t *testing.T) {
	b := start(t, Config{MetricsAddr: "127.0.0.1:0", Pprof: true})
	if code, _ := getStatus(t, "http://"+b.HTTPAddr()+"/metrics", nil); code != http.StatusNotFound {
		t.Fatalf("/metrics on the API address: %d", code)
	}
	if code, _ := getStatus(t, "http://"+b.HTTPAddr()+"/debug/pprof/", nil); code != http.StatusNotFound {
		t.Fatalf("/debug on the API address: %d", code)
	}
	if code, body := getStatus(t, "http://"+b.mln.Addr().String()+"/metrics", nil); code != 200 || !strings.Contains(body, "# HELP") {
		t.Fatalf("/metrics on its own address: %d", code)
	}
	tb := start(t, Config{MetricsToken: "metrics-token-0123456789"})
	if code, _ := getStatus(t, "http://"+tb.HTTPAddr()+"/metrics", nil); code != http.StatusUnauthorized {
		t.Fatalf("/metrics without the token: %d", code)
	}
	if code, _ := getStatus(t, "http://"+tb.HTTPAddr()+"/metrics", bearer("metrics-token-0123456789")); code != 200 {
		t.Fatalf("/metrics with the token: %d", code)
	}
	wide, err := Start(Config{DataDir: t.TempDir(), HTTPAddr: "0.0.0.0:0", NATSListen: "127.0.0.1:0", Log: quietLog(),
		TokensFile: writeFile(t, "tokens", "static-token-for-dave dave\n")})
	if err != nil {
		t.Fatal(err)
	}
	defer wide.Shutdown(t.Context())
	_, port, _ := net.SplitHostPort(wide.HTTPAddr())
	if code, _ := getStatus(t, "http://127.0.0.1:"+port+"/metrics", nil); code != http.StatusNotFound {
		t.Fatalf("/metrics on 0.0.0.0 without a token: %d", code)
	}
}

// TestSecurityOpenModeOnlyOnLoopback: without auth, every listener and
// the NATS connection must stay on loopback.
func TestSecurityOpenModeOnlyOnLoopback(t *testing.T) {
	for name, cfg := range map[string]Config{
		"remote NATS":        {NATSURL: "nats://192.0.2.1:4222"},
		"one remote of many": {NATSURL: "nats://127.0.0.1:4222,nats://nats.example.com:4222"},
		"NATS listener":      {NATSListen: "0.0.0.0:0"},
		"metrics listener":   {MetricsAddr: "0.0.0.0:0"},
		"HTTP listener":      {HTTPAddr: "0.0.0.0:0"},
	} {
		cfg.DataDir, cfg.Log = t.TempDir(), quietLog()
		if cfg.HTTPAddr == "" {
			cfg.HTTPAddr = "127.0.0.1:0"
		}
		if cfg.NATSListen == "" {
			cfg.NATSListen = "127.0.0.1:0"
		}
		b, err := Start(cfg)
		if err == nil {
			b.Shutdown(t.Context())
		}
		if !errors.Is(err, ErrOpenBeyondLoopback) {
			t.Errorf("%s: %v", name, err)
		}
		entries, _ := os.ReadDir(cfg.DataDir)
		if len(entries) != 0 {
			t.Errorf("%s: the refused broker created %v", name, slices.Collect(func(yield func(string) bool) {
				for _, e := range entries {
					yield(e.Name())
				}
			}))
		}
	}
}

// TestSecurityWarnsAuthWithoutTLS: auth on a non-loopback address without
// TLS starts, but says that tokens travel in clear text.
func TestSecurityWarnsAuthWithoutTLS(t *testing.T) {
	var log strings.Builder
	b, err := Start(Config{DataDir: t.TempDir(), HTTPAddr: "0.0.0.0:0", NATSListen: "127.0.0.1:0",
		TokensFile: writeFile(t, "tokens", "static-token-for-dave dave\n"), Log: slog.New(slog.NewTextHandler(&syncWriter{w: &log}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	b.Shutdown(t.Context())
	if !strings.Contains(log.String(), "clear text") {
		t.Fatalf("no warning in the log:\n%s", log.String())
	}
	cert, key, _ := selfSigned(t)
	log.Reset()
	b, err = Start(Config{DataDir: t.TempDir(), HTTPAddr: "0.0.0.0:0", NATSListen: "127.0.0.1:0", TLSCert: cert, TLSKey: key,
		TokensFile: writeFile(t, "tokens", "static-token-for-dave dave\n"), Log: slog.New(slog.NewTextHandler(&syncWriter{w: &log}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	b.Shutdown(t.Context())
	if strings.Contains(log.String(), "clear text") {
		t.Fatalf("a warning with TLS on:\n%s", log.String())
	}
}

// syncWriter serialises the log's writes.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
