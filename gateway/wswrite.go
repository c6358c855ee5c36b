package gateway

import (
	"bufio"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"time"

	"github.com/gorilla/websocket"
)

// stallWriter is the connection under a wsConn's buffered writer. When a
// write fails it keeps what it could not write, so that after a write
// timeout the writer can still finish the frame it stopped in and send a
// close frame: the stream stays well formed.
type stallWriter struct {
	conn net.Conn
	rest []byte // unwritten after the last failed write
}

// Write writes p. On an error it reports p as taken and keeps the
// unwritten part: bufio.Writer then holds nothing of it, and its error
// stays sticky.
func (w *stallWriter) Write(p []byte) (int, error) {
	n, err := w.conn.Write(p)
	if err != nil {
		w.rest = append(w.rest[:0], p[n:]...)
		return len(p), err
	}
	return n, nil
}

// writeFailed counts and logs a failed write. A write that timed out
// means the client stopped reading: it gets one more write timeout to take
// the rest of the frame the write stopped in (what the stallWriter kept,
// then tail) and a close frame saying why, so a client that reads again at
// last learns why it was cut. One that never reads sees the TCP connection
// close.
func (c *wsConn) writeFailed(err error, tail []byte) {
	why := "write_failed"
	if errors.Is(err, os.ErrDeadlineExceeded) {
		why = "write_timeout"
	}
	select {
	case <-c.closed:
		if c.code == 0 {
			return // the client hung up first
		}
	default:
	}
	c.g.log.Warn("cutting a WebSocket client", "reason", why, "remote", c.ws.RemoteAddr().String(), "uid", c.user, "err", err)
	if c.g.metrics != nil {
		c.g.metrics.Cuts.WithLabelValues(why).Inc()
	}
	if why != "write_timeout" {
		return
	}
	closing := frame{op: websocket.CloseMessage, data: websocket.FormatCloseMessage(closeSlow,
		"not reading: a write stalled for "+c.g.limits.WriteTimeout.String()+"; reconnect and resume")}
	c.sw.conn.SetWriteDeadline(time.Now().Add(c.g.limits.WriteTimeout))
	bw := bufio.NewWriterSize(c.sw.conn, 256)
	bw.Write(c.sw.rest)
	bw.Write(tail)
	writeFrame(bw, closing)
	bw.Flush() // best effort: the connection closes next either way
}

// writeFrame writes one unmasked, unfragmented server frame (RFC 6455
// section 5.2): a text message unless f.op names a control frame. The
// frame is rendered straight into the buffer's free space. On an error it
// returns the part of the frame the buffer did not take.
func writeFrame(w *bufio.Writer, f frame) (tail []byte, err error) {
	op := f.op
	if op == 0 {
		op = websocket.TextMessage
	}
	n := f.size()
	b := w.AvailableBuffer()
	b = append(b, 0x80|op)
	switch {
	case n < 126:
		b = append(b, byte(n))
	case n < 1<<16:
		b = append(b, 126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	if f.tp != 0 {
		b = appendNotification(b, f.sid, f.seq, f.data)
	} else {
		b = append(b, f.data...)
	}
	if m, err := w.Write(b); err != nil {
		return b[m:], err
	}
	return nil, nil
}
