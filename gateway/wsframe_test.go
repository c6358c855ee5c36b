package gateway

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// capture runs a server that answers the WebSocket handshake by hand and
// returns every byte the client sends after it.
func capture(t *testing.T, send func(c *websocket.Conn)) []byte {
	t.Helper()
	got := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		conn, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
			base64.StdEncoding.EncodeToString(h[:]) + "\r\n\r\n")
		brw.Flush()
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, _ := io.ReadAll(brw)
		got <- b
	}))
	defer srv.Close()
	d := websocket.Dialer{WriteBufferSize: 512} // gorilla fragments what outgrows it
	c, _, err := d.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	send(c)
	c.Close()
	return <-got
}

// The parser reads back what gorilla/websocket's client writes — text
// messages of every size, fragmented when they outgrow its buffer, with
// pings between them — whatever the chunks the bytes arrive in. The
// oracle is the list of messages sent.
func TestParseFrameReadsWhatGorillaWrites(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var want [][]byte
	var pings []string
	stream := capture(t, func(c *websocket.Conn) {
		for i := range 300 {
			size := rng.Intn(200)
			if i%10 == 0 {
				size = rng.Intn(70_000)
			}
			m := make([]byte, size)
			for j := range m {
				m[j] = byte('a' + rng.Intn(26))
			}
			want = append(want, m)
			if err := c.WriteMessage(websocket.TextMessage, m); err != nil {
				t.Fatal(err)
			}
			if i%7 == 0 {
				p := strings.Repeat("p", i%100)
				pings = append(pings, p)
				if err := c.WriteControl(websocket.PingMessage, []byte(p), time.Now().Add(time.Second)); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
	for round := range 5 {
		var got [][]byte
		var gotPings []string
		msg := message{max: 1 << 20}
		var buf []byte
		rest := bytes.Clone(stream)
		for len(rest) > 0 || len(buf) > 0 {
			k := min(len(rest), 1+rng.Intn(5000))
			if round == 0 {
				k = len(rest) // all at once
			}
			buf, rest = append(buf, rest[:k]...), rest[k:]
			for {
				f, n, _, err := parseFrame(buf, 1<<20)
				if errors.Is(err, errShort) {
					break
				}
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				switch f.op {
				case opPing:
					gotPings = append(gotPings, string(f.payload))
				case opClose:
					t.Fatalf("round %d: a close frame; gorilla's Close hangs up without one", round)
				default:
					m, err := msg.add(f)
					if err != nil {
						t.Fatal(err)
					}
					if m != nil {
						got = append(got, bytes.Clone(m))
					}
				}
				buf = buf[n:]
			}
			if len(rest) == 0 && len(buf) > 0 {
				t.Fatalf("round %d: %d bytes left inside a frame at the end", round, len(buf))
			}
		}
		if len(got) != len(want) {
			t.Fatalf("round %d: %d messages, want %d", round, len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("round %d: message %d differs (%d bytes, want %d)", round, i, len(got[i]), len(want[i]))
			}
		}
		if strings.Join(gotPings, ",") != strings.Join(pings, ",") {
			t.Fatalf("round %d: pings %q, want %q", round, gotPings, pings)
		}
	}
}

func TestParseFrameRefusesWhatBreaksTheProtocol(t *testing.T) {
	masked := func(b0 byte, payload []byte) []byte {
		out := []byte{b0, 0x80 | byte(len(payload)), 1, 2, 3, 4}
		for i, c := range payload {
			out = append(out, c^[]byte{1, 2, 3, 4}[i&3])
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		frame []byte
		code  int
	}{
		{"unmasked", []byte{0x81, 0x01, 'x'}, closeProtocolError},
		{"reserved bit", masked(0x81|0x40, []byte("x")), closeProtocolError},
		{"unknown opcode", masked(0x83, []byte("x")), closeProtocolError},
		{"fragmented ping", masked(0x09, []byte("x")), closeProtocolError},
		{"long ping", append([]byte{0x89, 0x80 | 126, 0, 126, 1, 2, 3, 4}, make([]byte, 126)...), closeProtocolError},
		{"top bit length", []byte{0x81, 0x80 | 127, 0x80, 0, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4}, closeProtocolError},
		{"over max", append([]byte{0x81, 0x80 | 126, 0x10, 0, 1, 2, 3, 4}, make([]byte, 4096)...), closeTooBig},
	} {
		_, _, _, err := parseFrame(tc.frame, 1000)
		var fe *frameError
		if !errors.As(err, &fe) || fe.code != tc.code {
			t.Errorf("%s: %v, want close %d", tc.name, err, tc.code)
		}
	}
	m := message{max: 10}
	if _, err := m.add(wsFrame{op: opContinuation, fin: true}); err == nil {
		t.Error("a continuation without a message was taken")
	}
	if _, err := m.add(wsFrame{op: opText, payload: []byte("12345")}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.add(wsFrame{op: opText, fin: true}); err == nil {
		t.Error("a new message inside a fragmented one was taken")
	}
	if _, err := m.add(wsFrame{op: opContinuation, fin: true, payload: []byte("123456")}); err == nil {
		t.Error("a message over max was taken")
	}
}

// FuzzFrame: whatever the bytes, the parser takes no more than it has,
// says how much it needs when it has too little, and never panics.
func FuzzFrame(f *testing.F) {
	f.Add([]byte{0x81, 0x85, 1, 2, 3, 4, 'h', 'e', 'l', 'l', 'o'})
	f.Add([]byte{0x01, 0x83, 0, 0, 0, 0, 'a', 'b', 'c', 0x80, 0x81, 0, 0, 0, 0, 'd'})
	f.Add([]byte{0x82, 0xfe, 0x01, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		msg := message{max: 4096}
		for len(b) > 0 {
			fr, n, need, err := parseFrame(b, 4096)
			if errors.Is(err, errShort) {
				if need != 0 && need <= len(b) {
					t.Fatalf("short with %d bytes, needing %d", len(b), need)
				}
				return
			}
			if err != nil {
				return
			}
			if n <= 0 || n > len(b) || n != need {
				t.Fatalf("took %d of %d bytes (need %d)", n, len(b), need)
			}
			if fr.op < opClose {
				if _, err := msg.add(fr); err != nil {
					return
				}
			}
			b = b[n:]
		}
	})
}
