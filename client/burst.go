package client

import (
	"net"
	"sync"
)

// maxBurst is how many bytes of frames a burst holds before it writes
// them and goes on.
const maxBurst = 64 << 10

// heldConn is the network connection under a wsConn's WebSocket. While a
// burst is written it holds the frames the WebSocket writes, so that
// requests queued together leave in one write(2), and the broker reads
// them in one read, instead of one system call each on both sides.
// Writes outside a burst (a pong the reader answers, the close frame) go
// straight through.
type heldConn struct {
	net.Conn
	mu   sync.Mutex // guards hold and buf against the reader's pongs
	hold bool
	buf  []byte
}

func (h *heldConn) Write(p []byte) (int, error) {
	h.mu.Lock()
	if h.hold {
		h.buf = append(h.buf, p...)
		h.mu.Unlock()
		return len(p), nil
	}
	h.mu.Unlock()
	return h.Conn.Write(p)
}

// start begins holding writes.
func (h *heldConn) start() {
	h.mu.Lock()
	h.hold = true
	h.mu.Unlock()
}

// held is how many bytes are held.
func (h *heldConn) held() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.buf)
}

// release stops holding and writes what was held, in one write. Only the
// burst's writer calls it, under wsConn.wmu, so nothing appends to buf
// until its next start.
func (h *heldConn) release() error {
	h.mu.Lock()
	b := h.buf
	h.hold, h.buf = false, h.buf[:0]
	h.mu.Unlock()
	if len(b) == 0 {
		return nil
	}
	_, err := h.Conn.Write(b)
	return err
}
