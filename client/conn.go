package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// conn is one WebSocket connection; the client replaces it when it drops.
type conn struct {
	ws      *websocket.Conn
	timeout time.Duration
	wmu     sync.Mutex // serializes writes
}

func dial(ctx context.Context, url string, o *Options) (*conn, error) {
	d := websocket.Dialer{ReadBufferSize: 64 << 10, WriteBufferSize: 16 << 10, HandshakeTimeout: 10 * time.Second}
	ws, resp, err := d.DialContext(ctx, url, o.header())
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusUnauthorized {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			return nil, &Error{Code: ErrUnauthorized.Code, Message: string(bytes.TrimSpace(body))}
		}
		return nil, fmt.Errorf("cellcast: dial %s: %w", url, err)
	}
	return &conn{ws: ws, timeout: o.WriteTimeout}, nil
}

// write sends one frame. A failed write closes the connection, so the
// reader sees the loss and the client reconnects.
func (cn *conn) write(b []byte) error {
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	cn.ws.SetWriteDeadline(time.Now().Add(cn.timeout))
	err := cn.ws.WriteMessage(websocket.TextMessage, b)
	if err != nil {
		cn.ws.Close()
	}
	return err
}

// readLoop hands each frame to handle, reusing one buffer: handle must
// not keep the slice.
func (cn *conn) readLoop(handle func([]byte)) error {
	var buf bytes.Buffer
	for {
		_, r, err := cn.ws.NextReader()
		if err != nil {
			return err
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			return err
		}
		handle(buf.Bytes())
	}
}

// backoff doubles d within [lo, hi] and adds up to a quarter of jitter,
// so clients cut together do not all come back together.
func backoff(d, lo, hi time.Duration) time.Duration {
	d = min(max(2*d, lo), hi)
	return d + rand.N(d/4+1)
}
