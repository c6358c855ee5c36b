package client

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// frameSink is a WebSocket server that keeps every text frame it reads
// and pings the client as it goes, so that pongs cross the bursts.
type frameSink struct {
	mu     sync.Mutex
	frames []string
	pongs  atomic.Int64
}

func newFrameSink(t *testing.T) (*frameSink, string) {
	s := &frameSink{}
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		ws.SetPongHandler(func(string) error { s.pongs.Add(1); return nil })
		done := make(chan struct{})
		defer close(done)
		go func() {
			for {
				select {
				case <-done:
					return
				case <-time.After(time.Millisecond):
					if ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second)) != nil {
						return
					}
				}
			}
		}()
		for {
			_, b, err := ws.ReadMessage()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.frames = append(s.frames, string(b))
			s.mu.Unlock()
		}
	}))
	t.Cleanup(srv.Close)
	return s, "ws" + strings.TrimPrefix(srv.URL, "http")
}

// waitFrames waits until n frames arrived and returns them.
func (s *frameSink) waitFrames(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		got := append([]string(nil), s.frames...)
		s.mu.Unlock()
		if len(got) >= n || time.Now().After(deadline) {
			if len(got) != n {
				t.Fatalf("%d frames arrived, want %d", len(got), n)
			}
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// countConn counts the writes that reach the network, pongs apart: the
// reader answers the sink's pings on writes of their own, which the sink
// counts only once it reads them.
type countConn struct {
	net.Conn
	writes, pongs atomic.Int64
}

// A pong alone on its write: FIN and opcode 10, then an empty payload's
// length and its 4-byte mask (the sink's pings carry nothing). A pong
// written while a burst is held leaves inside the burst's write.
const (
	pongHeader = 0x8A
	pongLen    = 6
)

func (c *countConn) Write(p []byte) (int, error) {
	if len(p) == pongLen && p[0] == pongHeader {
		c.pongs.Add(1)
	} else {
		c.writes.Add(1)
	}
	return c.Conn.Write(p)
}

// dialSink connects a wsConn to the sink as Dial would, with its writes
// counted, and reads (answering pings) until the test ends.
func dialSink(t *testing.T, url string) (*wsConn, *countConn) {
	t.Helper()
	var cc *countConn
	var nc *heldConn
	d := websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		raw, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		cc = &countConn{Conn: raw}
		nc = &heldConn{Conn: cc}
		return nc, nil
	}}
	ws, _, err := d.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	cn := &wsConn{ws: ws, nc: nc, timeout: 5 * time.Second}
	done := make(chan struct{})
	go func() { cn.readLoop(func(bool, []byte) {}); close(done) }()
	t.Cleanup(func() { ws.Close(); <-done })
	return cn, cc
}

// Frames queued while a write is under way leave together: one write for
// a burst under maxBurst bytes, the next write once a burst reaches it,
// each frame whole and in its order.
func TestQueuedFramesLeaveInBursts(t *testing.T) {
	for _, tc := range []struct {
		frames, size, writes int
	}{
		{frames: 50, size: 100, writes: 1},
		{frames: 50, size: 2000, writes: 2}, // 33 frames reach maxBurst, then 17
	} {
		t.Run(fmt.Sprintf("%dx%dB", tc.frames, tc.size), func(t *testing.T) {
			sink, url := newFrameSink(t)
			cn, cc := dialSink(t, url)
			cn.qmu.Lock()
			cn.writing = true // as if another sender were writing
			cn.qmu.Unlock()
			var want []string
			for i := range tc.frames {
				f := fmt.Sprintf("%04d%s", i, strings.Repeat("x", tc.size-4))
				want = append(want, f)
				if err := cn.send("publish", []byte(f)); err != nil {
					t.Fatal(err)
				}
			}
			before := cc.writes.Load()
			if err := cn.drain(); err != nil {
				t.Fatal(err)
			}
			got := sink.waitFrames(t, tc.frames)
			if n := cc.writes.Load() - before; n != int64(tc.writes) {
				t.Fatalf("%d writes for the burst, want %d (pongs apart: %d)", n, tc.writes, cc.pongs.Load())
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("frame %d: got %.10q…, want %.10q…", i, got[i], want[i])
				}
			}
			cn.qmu.Lock()
			writing := cn.writing
			cn.qmu.Unlock()
			if writing {
				t.Fatal("still writing after the queue drained")
			}
		})
	}
}

// Many senders at once, with pings crossing: every frame arrives once,
// whole, each sender's in the order it sent them, and the pongs are
// answered.
func TestConcurrentSendersFramesArriveOnceInOrder(t *testing.T) {
	sink, url := newFrameSink(t)
	cn, _ := dialSink(t, url)
	const senders, each = 16, 300
	var wg sync.WaitGroup
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				pad := strings.Repeat("y", (s*each+i)%700)
				if err := cn.send("publish", fmt.Appendf(nil, "%02d %05d %s", s, i, pad)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got := sink.waitFrames(t, senders*each)
	next := make([]int, senders)
	for _, f := range got {
		var s, i int
		var pad string
		if _, err := fmt.Sscanf(f, "%d %d %s", &s, &i, &pad); err != nil && !strings.HasSuffix(f, " ") {
			t.Fatalf("frame %.20q: %v", f, err)
		}
		if s < 0 || s >= senders || i != next[s] {
			t.Fatalf("sender %d's frame %d arrived, want its frame %d", s, i, next[s])
		}
		if want := (s*each + i) % 700; len(f) != len(fmt.Sprintf("%02d %05d ", s, i))+want {
			t.Fatalf("sender %d's frame %d is %d bytes long, want its padding of %d", s, i, len(f), want)
		}
		next[s]++
	}
	if sink.pongs.Load() == 0 {
		t.Fatal("no pong came back")
	}
}
