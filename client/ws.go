package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/seed84792017/cellcast/protocol"
)

// transport carries requests to the broker; its frames come back through
// Client.frame, one at a time, and its loss through Client.lost.
type transport interface {
	// send writes one request frame of the op.
	send(op string, b []byte) error
	// close ends the transport in order.
	close() error
	// abort cuts it as a network failure would.
	abort()
}

// wsConn is one WebSocket connection; the client dials a new one when it
// drops.
//
// A request is queued and written by the sender that finds no write under
// way: it writes every frame queued until none is, each burst in one
// write(2) (heldConn). At low load that is each sender writing its own
// frame at once; with requests in flight the others only queue theirs.
type wsConn struct {
	ws      *websocket.Conn
	nc      *heldConn
	bin     bool // EncodingCBOR: binary frames of CBOR both ways
	timeout time.Duration
	wmu     sync.Mutex // serializes writes; taken before qmu

	qmu     sync.Mutex // guards queue and writing
	queue   [][]byte   // frames waiting for the writer
	writing bool       // a sender is writing the queue
}

// Dial connects to a broker's WebSocket endpoint, such as
// "ws://127.0.0.1:8080/ws". Only this first connection's failure is
// returned; later drops reconnect in the background, to url and
// opts.Fallback in turn.
func Dial(ctx context.Context, url string, opts Options) (*Client, error) {
	opts.withDefaults()
	c := newClient(url, opts)
	urls := append([]string{url}, opts.Fallback...)
	next := 0
	c.redial = func(ctx context.Context) (transport, error) { // one reconnecting goroutine at a time
		next = (next + 1) % len(urls)
		return dialWS(ctx, c, urls[next])
	}
	cn, err := dialWS(ctx, c, url)
	if err != nil {
		return nil, err
	}
	c.start(cn)
	return c, nil
}

// dialWS connects and starts the connection's reader.
func dialWS(ctx context.Context, c *Client, url string) (*wsConn, error) {
	o := &c.opts
	var nc *heldConn
	d := websocket.Dialer{ReadBufferSize: 64 << 10, WriteBufferSize: 16 << 10, HandshakeTimeout: 10 * time.Second,
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			nc = &heldConn{Conn: c}
			return nc, nil
		}}
	bin := o.Encoding == EncodingCBOR
	if bin {
		d.Subprotocols = []string{subprotocolCBOR}
	}
	if !o.SeparateNotifications {
		var err error
		if url, err = groupedURL(url); err != nil {
			return nil, err
		}
	}
	ws, resp, err := d.DialContext(ctx, url, o.header())
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusUnauthorized {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			return nil, refusal(body)
		}
		return nil, fmt.Errorf("cellcast: dial %s: %w", url, err)
	}
	if bin && ws.Subprotocol() != subprotocolCBOR {
		// The broker fell back to JSON (RFC 6455): it does not speak it.
		ws.Close()
		return nil, fmt.Errorf("%w: %s does not speak %s", ErrProtocol, url, subprotocolCBOR)
	}
	cn := &wsConn{ws: ws, nc: nc, bin: bin, timeout: o.WriteTimeout}
	c.readers.Add(1)
	go func() {
		defer c.readers.Done()
		c.lost(cn, cn.readLoop(func(binary bool, b []byte) {
			if binary {
				c.frameCBOR(cn, b)
			} else {
				c.frame(cn, b)
			}
		}))
	}()
	return cn, nil
}

// refusal is the error of an HTTP 401 at the upgrade: the broker's error
// frame, or the body's text when it is not one.
func refusal(body []byte) error {
	var rep wireReply
	if json.Unmarshal(body, &rep) == nil && rep.Op == protocol.OpError && rep.Code != "" {
		return rep.err()
	}
	return &Error{Code: ErrUnauthorized.Code, Message: string(bytes.TrimSpace(body))}
}

// send queues one frame, and writes the queue unless another sender is
// writing it. A failed write closes the connection, so the reader sees
// the loss, fails the calls in flight and the client reconnects.
func (cn *wsConn) send(_ string, b []byte) error {
	cn.qmu.Lock()
	cn.queue = append(cn.queue, b)
	if cn.writing {
		cn.qmu.Unlock()
		return nil
	}
	cn.writing = true
	cn.qmu.Unlock()
	return cn.drain()
}

// drain writes queued frames, a burst at a time, until none is left.
func (cn *wsConn) drain() error {
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	var burst [][]byte
	for {
		cn.qmu.Lock()
		burst, cn.queue = cn.queue, burst[:0]
		if len(burst) == 0 {
			cn.writing = false
			cn.qmu.Unlock()
			return nil
		}
		cn.qmu.Unlock()
		err := cn.writeBurst(burst)
		clear(burst)
		if err != nil {
			cn.ws.Close()
			cn.qmu.Lock()
			cn.queue, cn.writing = nil, false
			cn.qmu.Unlock()
			return err
		}
	}
}

// writeBurst writes frames, at most maxBurst bytes to a write(2).
func (cn *wsConn) writeBurst(frames [][]byte) error {
	cn.ws.SetWriteDeadline(time.Now().Add(cn.timeout))
	mt := websocket.TextMessage
	if cn.bin {
		mt = websocket.BinaryMessage
	}
	cn.nc.start()
	for _, b := range frames {
		if err := cn.ws.WriteMessage(mt, b); err != nil {
			cn.nc.release()
			return err
		}
		if cn.nc.held() >= maxBurst {
			if err := cn.nc.release(); err != nil {
				return err
			}
			cn.nc.start()
		}
	}
	return cn.nc.release()
}

func (cn *wsConn) close() error {
	cn.wmu.Lock()
	cn.ws.SetWriteDeadline(time.Now().Add(time.Second))
	cn.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")) // best effort
	cn.wmu.Unlock()
	return cn.ws.Close()
}

func (cn *wsConn) abort() { cn.ws.NetConn().Close() }

// readLoop hands each frame to handle, saying whether it is binary,
// reusing one buffer: handle must not keep the slice.
func (cn *wsConn) readLoop(handle func(bool, []byte)) error {
	var buf bytes.Buffer
	for {
		mt, r, err := cn.ws.NextReader()
		if err != nil {
			cn.ws.Close()
			return err
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			cn.ws.Close()
			return err
		}
		handle(mt == websocket.BinaryMessage, buf.Bytes())
	}
}

// backoff doubles d within [lo, hi] and adds up to a quarter of jitter,
// so clients cut together do not all come back together.
func backoff(d, lo, hi time.Duration) time.Duration {
	d = min(max(2*d, lo), hi)
	return d + rand.N(d/4+1)
}
