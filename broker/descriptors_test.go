package broker

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// A broker that runs out of file descriptors refuses new connections
// cleanly — each is accepted on a spare descriptor and closed at once,
// which is logged — while the clients it has keep being served; once
// descriptors are free again, new clients connect.
func TestOutOfDescriptorsKeepsServingTheClientsItHas(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the broker binary")
	}
	bin := buildBroker(t)
	wrapper := filepath.Join(t.TempDir(), "broker-256")
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\nulimit -n 256 || exit 1\nexec "+bin+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := startBroker(t, wrapper, t.TempDir(), "--index", "none")
	defer p.kill()

	ws, _, err := websocket.DefaultDialer.Dial("ws://"+p.addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	do := func(req string) map[string]any {
		t.Helper()
		if err := ws.WriteMessage(websocket.TextMessage, []byte(req)); err != nil {
			t.Fatal(err)
		}
		ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		var m map[string]any
		if err := ws.ReadJSON(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := do(`{"id":"1","op":"subscribe","uid":"a","cell":"1.2","future":"1m"}`); m["op"] != "subscribed" {
		t.Fatalf("subscribe: %v", m)
	}

	// Hold TCP connections until the broker has no descriptor left: the
	// last ones are closed by the broker at once.
	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	refusedSeen := 0
	for i := 0; i < 400 && refusedSeen < 5; i++ {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		// An upgraded WebSocket holds its descriptor; a refused one reads EOF.
		fmt.Fprintf(c, "GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", p.addr)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			refusedSeen++
			c.Close()
			continue
		}
		if resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("connection %d: %s", i, resp.Status)
		}
		flood = append(flood, c)
	}
	if refusedSeen < 5 {
		t.Fatalf("%d connections held and none refused: the descriptor limit did not bite", len(flood))
	}

	// The client the broker had is served all the same: the reply and
	// the notification come.
	seen := map[any]bool{}
	seen[do(`{"id":"2","op":"publish","uid":"b","cell":"1.2.3","expires":"1m","desc":"still here"}`)["op"]] = true
	for !seen["published"] || !seen["notification"] {
		var m map[string]any
		ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		if err := ws.ReadJSON(&m); err != nil {
			t.Fatalf("reading while out of descriptors (seen %v): %v", seen, err)
		}
		seen[m["op"]] = true
	}
	if !strings.Contains(p.out.String(), "reason=descriptors") {
		t.Fatalf("the refusals are not logged:\n%s", p.out)
	}

	// Descriptors free again: a new client connects and is served.
	for _, c := range flood {
		c.Close()
	}
	flood = nil
	var again *websocket.Conn
	for end := time.Now().Add(10 * time.Second); again == nil; time.Sleep(50 * time.Millisecond) {
		if again, _, err = websocket.DefaultDialer.Dial("ws://"+p.addr+"/ws", nil); err != nil && time.Now().After(end) {
			t.Fatalf("no new client after the descriptors came back: %v", err)
		}
	}
	defer again.Close()
	again.WriteMessage(websocket.TextMessage, []byte(`{"id":"3","op":"query","attr":"category","eq":"x","k":1}`))
	again.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, _, err := again.ReadMessage(); err != nil && err != io.EOF {
		t.Fatalf("the new client is not served: %v", err)
	}
}

// A storm of connections from one source address past its rate is
// closed at once and counted; the address's connections within the burst
// are served, and so are other sources.
func TestConnectionRatePerSource(t *testing.T) {
	b := start(t, Config{Indexes: "none", HTTP: HTTPLimits{ConnRatePerIP: 0.001, ConnBurstPerIP: 5}})
	served, refused := 0, 0
	for range 12 {
		ws, _, err := websocket.DefaultDialer.Dial("ws://"+b.HTTPAddr()+"/ws", nil)
		if err != nil {
			refused++
			continue
		}
		served++
		defer ws.Close()
	}
	if served != 5 || refused != 7 {
		t.Fatalf("%d served and %d refused from one address, want 5 and 7", served, refused)
	}
	other := &websocket.Dialer{NetDialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}
	ws, _, err := other.Dial("ws://"+b.HTTPAddr()+"/ws", nil)
	if err != nil {
		t.Fatalf("another source is refused too: %v", err)
	}
	ws.Close()
	hc := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 3)}}).DialContext}}
	resp, err := hc.Get("http://" + b.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if m := string(body); !strings.Contains(m, `cellcast_connections_refused_total{reason="source_rate"} 7`) {
		t.Fatalf("refusals not counted:\n%s", grepLines(m, "refused"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
