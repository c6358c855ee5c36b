package broker

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawWS dials the broker's WebSocket endpoint over plain TCP and does
// the handshake by hand, so a test can send frames no library would.
func rawWS(t *testing.T, b *Broker) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", b.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: "+b.HTTPAddr()+"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %v %v", resp, err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	return c, br
}

// readFrame reads one server frame (unmasked, small).
func readFrame(t *testing.T, br *bufio.Reader) (op byte, payload []byte) {
	t.Helper()
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		t.Fatal(err)
	}
	n := int(h[1] & 0x7f)
	if n == 126 {
		var l [2]byte
		io.ReadFull(br, l[:])
		n = int(binary.BigEndian.Uint16(l[:]))
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(br, payload); err != nil {
		t.Fatal(err)
	}
	return h[0] & 0x0f, payload
}

// masked frames a client message with a zero mask.
func masked(b0 byte, payload string) []byte {
	return append([]byte{b0, 0x80 | byte(len(payload)), 0, 0, 0, 0}, payload...)
}

// A client that breaks the framing rules gets a close frame saying why;
// one that frames correctly — a request split over fragments and TCP
// writes, a ping in between — is served, and its close is echoed.
func TestWebSocketFramingIsCheckedAndServed(t *testing.T) {
	b := start(t, Config{Indexes: "none"})

	c, br := rawWS(t, b)
	c.Write([]byte{0x81, 0x05, 'h', 'e', 'l', 'l', 'o'}) // unmasked
	op, p := readFrame(t, br)
	if op != 0x8 || len(p) < 2 || binary.BigEndian.Uint16(p) != 1002 || !strings.Contains(string(p[2:]), "unmasked") {
		t.Fatalf("unmasked frame: got op %d %q, want a 1002 close", op, p)
	}

	c, br = rawWS(t, b)
	req := `{"id":"1","op":"subscribe","uid":"u","cell":"1.2","future":"1m"}`
	stream := append(masked(0x01, req[:10]), masked(0x89, "hi")...) // first fragment, then a ping
	stream = append(stream, masked(0x80, req[10:])...)              // the last fragment
	for _, by := range stream {                                     // a byte per write
		if _, err := c.Write([]byte{by}); err != nil {
			t.Fatal(err)
		}
	}
	var sawPong, sawReply bool
	for !sawPong || !sawReply {
		op, p := readFrame(t, br)
		switch {
		case op == 0xA && string(p) == "hi":
			sawPong = true
		case op == 0x1 && strings.Contains(string(p), `"subscribed"`):
			sawReply = true
		default:
			t.Fatalf("unexpected frame op %d %q", op, p)
		}
	}
	c.Write(append([]byte{0x88, 0x82, 0, 0, 0, 0}, 0x03, 0xe8)) // close 1000
	if op, p := readFrame(t, br); op != 0x8 || binary.BigEndian.Uint16(p) != 1000 {
		t.Fatalf("close: got op %d %q, want 1000 echoed", op, p)
	}
}
