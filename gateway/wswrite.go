package gateway

import (
	"bufio"
	"encoding/binary"
	"errors"
	"maps"
	"net"
	"os"
	"runtime"
	"slices"
	"sync"
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
	c.g.log.Warn("cutting a WebSocket client", "reason", why, "remote", c.conn.RemoteAddr().String(), "uid", c.user, "err", err)
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
// section 5.2): a text message (binary with f.bin) unless f.op names a
// control frame. The
// frame is rendered straight into the buffer's free space. On an error it
// returns the part of the frame the buffer did not take.
func writeFrame(w *bufio.Writer, f frame) (tail []byte, err error) {
	op := f.op
	if op == 0 {
		op = websocket.TextMessage
		if f.bin {
			op = websocket.BinaryMessage
		}
	}
	b := appendFrameHead(w.AvailableBuffer(), op, f.size())
	switch {
	case f.list != nil:
		return writeList(w, b, f)
	case f.tp != 0 && f.bin:
		b = appendNotificationCBOR(b, f.sid, f.seq, f.data)
	case f.tp != 0:
		b = appendNotification(b, f.sid, f.seq, f.data)
	case len(f.data) > w.Available()-len(b):
		// A reply larger than the buffer's room: the head, then the
		// payload through the buffer, which writes what outgrows it
		// straight to the socket. Appending it to the head would copy a
		// reply of past results into a new slice of its size.
		if m, err := w.Write(b); err != nil {
			return append(b[m:], f.data...), err
		}
		if m, err := w.Write(f.data); err != nil {
			return f.data[m:], err
		}
		return nil, nil
	default:
		b = append(b, f.data...)
	}
	if m, err := w.Write(b); err != nil {
		return b[m:], err
	}
	return nil, nil
}

// writeFrames writes fs in order, the notifications of one publication
// side by side as one frame when grouped. On an error it returns the part
// of the frame the buffer did not take.
func writeFrames(w *bufio.Writer, fs []frame, grouped bool) (tail []byte, err error) {
	for i := 0; i < len(fs); {
		n := 1
		if grouped {
			n = groupLen(fs[i:])
		}
		if n > 1 {
			tail, err = writeGroup(w, fs[i:i+n])
		} else {
			tail, err = writeFrame(w, fs[i])
		}
		if err != nil {
			return tail, err
		}
		i += n
	}
	return nil, nil
}

// appendFrameHead appends the head of a final, unmasked frame of opcode
// op with an n-byte payload.
func appendFrameHead(b []byte, op byte, n int) []byte {
	b = append(b, 0x80|op)
	switch {
	case n < 126:
		return append(b, byte(n))
	case n < 1<<16:
		b = append(b, 126)
		return binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, 127)
		return binary.BigEndian.AppendUint64(b, uint64(n))
	}
}

// writeBufs are the writers' buffers, held only while a writer runs: one
// write(2) per burst without 64 KiB held by every idle connection.
var writeBufs = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 64<<10) }}

// writer drains the queue and stops when it is empty; the next frame
// queued starts another (sendQueue.start). When the connection ends, the
// writer running then sends what the close asks for and cleans up.
func (c *wsConn) writer() {
	bw := writeBufs.Get().(*bufio.Writer)
	bw.Reset(c.sw)
	defer func() {
		bw.Reset(nil)
		writeBufs.Put(bw)
	}()
	spare := getFrames()
	for {
		// Let the goroutines ready to run go first: under load they queue
		// more frames for this connection, and the burst is written in one
		// system call instead of several.
		runtime.Gosched()
		fs, what := c.q.next(spare)
		switch what {
		case stopWriter:
			putFrames(fs) // the queue's storage, empty
			putFrames(spare)
			return
		case finishConn:
			putFrames(spare)
			c.finish(bw)
			return
		}
		if !c.write(bw, fs) {
			c.finish(nil)
			return
		}
		c.catchUp()
		clear(fs) // let the written frames go
		spare = fs[:0]
	}
}

// framesPool holds the storage of idle connections' queues: a connection
// under load empties its queue between bursts, and growing a new one for
// each burst cost a few percent of the broker's CPU.
var framesPool = sync.Pool{New: func() any { return new([]frame) }}

func getFrames() []frame { return (*framesPool.Get().(*[]frame))[:0] }

// putFrames pools fs's storage, unless one outsized burst grew it; its
// frames must be cleared.
func putFrames(fs []frame) {
	if cap(fs) == 0 || cap(fs) > 4096 {
		return
	}
	fs = fs[:0]
	framesPool.Put(&fs)
}

// finish ends the connection: with bw (nil after a failed write) it sends
// what is queued if the close drains, and the close frame if it has a
// code; then it hangs up and lets go of the connection's subscriptions.
func (c *wsConn) finish(bw *bufio.Writer) {
	g := c.g
	c.pinger.Stop()
	if bw != nil {
		ok := !c.drain || c.write(bw, c.q.rest())
		if ok && c.code != 0 {
			c.write(bw, []frame{{op: websocket.CloseMessage, data: websocket.FormatCloseMessage(c.code, c.reason)}})
		}
	}
	if idlePoller().unpark(c) {
		c.endReading() // no reader runs to end it
	}
	c.conn.Close()
	<-c.readDone
	g.mu.Lock()
	delete(g.conns, c)
	g.mu.Unlock()
	c.mu.Lock()
	sids, stop := c.sids, c.stopWatch
	c.sids = nil
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
	g.users.disconnect(c.user)
	if len(sids) > 0 {
		g.svc.Detach(slices.Collect(maps.Keys(sids)), c)
	}
	if g.metrics != nil {
		g.metrics.Connections.WithLabelValues("ws").Dec()
	}
	g.writers.Done()
}

// ping queues a ping and sets the next one.
func (c *wsConn) ping() {
	select {
	case <-c.closed:
		return
	default:
	}
	if c.idleTooLong() {
		return
	}
	c.control(websocket.PingMessage, nil)
	c.pinger.Reset(pingEvery)
}

// control queues a control frame.
func (c *wsConn) control(op byte, data []byte) { c.q.push(frame{op: op, data: data}, roomControl) }

// write writes frames through bw and flushes: one write(2) for a burst,
// unless it outgrows the buffer.
func (c *wsConn) write(bw *bufio.Writer, fs []frame) bool {
	if len(fs) == 0 {
		return true
	}
	c.conn.SetWriteDeadline(time.Now().Add(c.g.limits.WriteTimeout))
	if tail, err := writeFrames(bw, fs, c.grouped); err != nil {
		c.writeFailed(err, tail)
		return false
	}
	if err := bw.Flush(); err != nil {
		c.writeFailed(err, nil)
		return false
	}
	if m := c.g.metrics; m != nil {
		now := time.Now()
		n := 0
		for _, f := range fs {
			if f.tp != 0 {
				if !f.replayed {
					m.PushLatency.Observe(now.Sub(time.Unix(0, f.tp)).Seconds())
				}
				n++
			}
		}
		m.Notifications.WithLabelValues("ws").Add(float64(n))
	}
	return true
}
