package gateway

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/gorilla/websocket"
)

// gorilla/websocket writes a close frame itself when a client breaks the
// protocol or sends a message over the read limit (Conn.handleProtocolError
// and the read-limit check), straight to the socket, while the
// connection's writer may be halfway through a frame of its own: the
// stream would interleave. So the upgrader gets a connection whose writes
// are refused once the handshake is done, and the reader hands the
// error to the writer, which sends the close frame (readFailed).

// errWriterOnly is what gorilla/websocket's own writes get.
var errWriterOnly = errors.New("gateway: the connection's writer is the only one to write to a WebSocket")

// hijackGuard is the ResponseWriter the upgrader sees: it hijacks the
// connection wrapped in a guardedConn.
type hijackGuard struct {
	http.ResponseWriter
	conn *guardedConn
}

func (h *hijackGuard) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := h.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("gateway: the response cannot be hijacked")
	}
	c, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	h.conn = &guardedConn{Conn: c}
	return h.conn, brw, nil
}

// guardedConn passes writes through until sealed, then refuses them. The
// writer writes to the raw connection underneath.
type guardedConn struct {
	net.Conn
	sealed atomic.Bool
}

func (c *guardedConn) Write(p []byte) (int, error) {
	if c.sealed.Load() {
		return 0, errWriterOnly
	}
	return c.Conn.Write(p)
}

// upgrade upgrades r and returns the connection with the socket only the
// writer may write to.
func upgrade(up *websocket.Upgrader, w http.ResponseWriter, r *http.Request) (*websocket.Conn, net.Conn, error) {
	h := &hijackGuard{ResponseWriter: w}
	ws, err := up.Upgrade(h, r, nil)
	if err != nil {
		return nil, nil, err
	}
	h.conn.sealed.Store(true)
	return ws, h.conn.Conn, nil
}

// maxCloseReason is the longest reason a close frame holds (125 bytes of
// payload less the code).
const maxCloseReason = 123

// readFailed turns a read error into the close frame gorilla/websocket
// would have sent: 1009 for a message over the read limit, 1002 for a
// broken protocol. A client's close was answered by the close handler; a
// network error ends the connection without a frame.
func (c *wsConn) readFailed(err error) {
	var ce *websocket.CloseError
	switch {
	case errors.As(err, &ce):
	case errors.Is(err, websocket.ErrReadLimit):
		c.close(websocket.CloseMessageTooBig, fmt.Sprintf("message over %d bytes; closing", int64(c.g.limits.MaxFrame)*16), false)
	case strings.HasPrefix(err.Error(), "websocket: "):
		reason := "protocol error: " + strings.TrimPrefix(err.Error(), "websocket: ")
		if len(reason) > maxCloseReason {
			reason = reason[:maxCloseReason]
		}
		c.close(websocket.CloseProtocolError, reason, false)
	}
}
