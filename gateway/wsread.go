package gateway

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/seed84792017/cellcast/subscriptions"
)

// readBufs lend the readers their buffers while bytes wait: an idle
// connection holds none.
var readBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// read serves the connection's requests. While nothing waits it parks
// the connection with the idle poller and ends, and the poller runs read
// again once bytes arrive; where it cannot park, it blocks on one byte in
// the connection's own one-byte array. Either way, it borrows a buffer
// for what follows, serves every request whose frames are complete, and
// gives the buffer back as soon as no frame is left half read. An idle
// connection so costs no buffer and, on Linux, no goroutine. woken says
// the poller started this reader: bytes wait, so it reads before it may
// park again.
func (c *wsConn) read(woken bool) {
	var rb readBuffer
	parked := false
	defer func() {
		rb.release()
		if !parked {
			c.endReading()
		}
	}()
	for {
		if rb.empty() {
			rb.release()
			if !woken && idlePoller().park(c) {
				parked = true
				return
			}
			woken = false
			c.conn.SetReadDeadline(time.Now().Add(pongWait))
			if _, err := c.conn.Read(c.one[:]); err != nil {
				return
			}
			rb.borrow(c.one[0])
		}
		// A frame takes at least 6 bytes, so this read does not wait
		// long: the client is sending.
		c.conn.SetReadDeadline(time.Now().Add(pongWait))
		n, err := c.conn.Read(rb.free())
		rb.end += n
		c.lastRead.Store(time.Now().UnixNano())
		for {
			f, used, need, perr := parseFrame(rb.data(), c.msg.max)
			if errors.Is(perr, errShort) {
				rb.makeRoom(need)
				break
			}
			if perr != nil {
				c.refuse(perr)
				return
			}
			if !c.frame(f) {
				return
			}
			rb.start += used
		}
		if err != nil {
			return
		}
	}
}

// endReading is the end of the connection's reading, for good.
func (c *wsConn) endReading() {
	// The writer detaches the connection's subscriptions once readDone
	// closes: no request may still be adding one. The client is gone, so
	// what its requests still wait for ends.
	c.cancel()
	c.pipe.wait()
	close(c.readDone)
	c.close(0, "", false) // hang up, without a close frame unless one is due
}

// idleTooLong cuts a parked connection that sent nothing, not even a
// pong, for pongWait: what the read deadline does for a blocked reader.
// The pinger calls it.
func (c *wsConn) idleTooLong() bool {
	if time.Since(time.Unix(0, c.lastRead.Load())) < pongWait || !idlePoller().unpark(c) {
		return false
	}
	c.endReading()
	return true
}

// readBuffer holds what a reader has read and not yet parsed, in storage
// borrowed from readBufs, or its own past 64 KiB.
type readBuffer struct {
	store      []byte
	borrowed   *[]byte // store's pool entry, when borrowed
	start, end int     // the unparsed bytes are store[start:end]
}

func (b *readBuffer) empty() bool  { return b.start == b.end }
func (b *readBuffer) data() []byte { return b.store[b.start:b.end] }

// free is the space to read into; it is never empty.
func (b *readBuffer) free() []byte {
	if b.end == len(b.store) {
		b.makeRoom(b.end - b.start + 1)
	}
	return b.store[b.end:]
}

// borrow takes storage holding first.
func (b *readBuffer) borrow(first byte) {
	b.borrowed = readBufs.Get().(*[]byte)
	b.store = (*b.borrowed)[:cap(*b.borrowed)]
	b.store[0], b.start, b.end = first, 0, 1
}

// makeRoom makes the storage hold at least need bytes from start: it
// moves the unparsed bytes to the front, and grows the storage when that
// is not enough.
func (b *readBuffer) makeRoom(need int) {
	if need <= len(b.store)-b.start {
		return
	}
	if need <= len(b.store) {
		b.end = copy(b.store, b.data())
		b.start = 0
		return
	}
	store := make([]byte, max(need, 2*len(b.store)))
	b.end = copy(store, b.data())
	b.start = 0
	b.releaseStore()
	b.store = store
	if len(store) <= 64<<10 {
		s := store[:0]
		b.borrowed = &s // goes to the pool in its place
	}
}

// release gives the storage back; nothing may wait in it.
func (b *readBuffer) release() {
	b.releaseStore()
	b.store, b.start, b.end = nil, 0, 0
}

func (b *readBuffer) releaseStore() {
	if b.borrowed != nil {
		*b.borrowed = (*b.borrowed)[:0]
		readBufs.Put(b.borrowed)
		b.borrowed = nil
	}
}

// frame handles one parsed frame, reporting whether reading goes on.
func (c *wsConn) frame(f wsFrame) bool {
	p, max := c.pipe, c.g.limits.MaxFrame
	switch f.op {
	case opPing:
		c.control(websocket.PongMessage, append([]byte(nil), f.payload...))
		return true
	case opPong:
		return true // it came: the read deadline moved on
	case opClose:
		// Echo the client's code (none: an empty close); the writer sends
		// what is queued, then the close, and hangs up.
		code := websocket.CloseNoStatusReceived
		if len(f.payload) >= 2 {
			code = int(binary.BigEndian.Uint16(f.payload))
		}
		c.close(code, "", true)
		return false
	}
	m, err := c.msg.add(f)
	if err != nil {
		c.refuse(err)
		return false
	}
	if m == nil {
		return true // more fragments to come
	}
	if len(m) > max {
		p.run(c, func(_ context.Context, s session, _ subscriptions.Stamped) {
			s.reply(errorFrame(nil, errorf(CodeTooLarge, "request over %d bytes", max)))
		})
		c.count("other", CodeTooLarge)
		return true
	}
	var data []byte
	if c.bin {
		// A new slice, as below: the request as JSON.
		var id json.RawMessage
		var e *Error
		if c.msg.op != opBinary {
			e = errorf(CodeBadRequest, "this connection speaks %s: send requests in binary frames", SubprotocolCBOR)
		} else {
			data, id, e = requestJSON(m)
		}
		if e != nil {
			p.run(c, func(_ context.Context, s session, _ subscriptions.Stamped) { s.reply(errorFrame(id, e)) })
			c.count("other", CodeBadRequest)
			return true
		}
	} else {
		data = append([]byte(nil), m...) // m lies in the read buffer, read into again while data is served
	}
	if !c.lim.Allow() {
		req, _ := decodeRequest(data)
		e := errorf(CodeOverloaded, "over %g requests per second; slow down", c.g.limits.Rate)
		e.Limit = LimitConnRate
		r := c.lim.Reserve() // only to learn when a token is due
		// At least one token's time: a token may have come due between
		// Allow and Reserve, but the client is over the rate.
		e.RetryAfter = time.Duration(float64(time.Second) / c.g.limits.Rate)
		if d := r.Delay(); d > e.RetryAfter {
			e.RetryAfter = d
		}
		r.Cancel()
		p.run(c, func(_ context.Context, s session, _ subscriptions.Stamped) { s.reply(errorFrame(req.ID, e)) })
		c.count("other", CodeOverloaded)
		return true
	}
	p.run(c, func(ctx context.Context, s session, stamped subscriptions.Stamped) { c.g.serve(ctx, s, data, stamped) })
	return true
}

// refuse closes a connection whose client broke the protocol, with the
// close code and reason, a log line and a metric.
func (c *wsConn) refuse(err error) {
	var fe *frameError
	if !errors.As(err, &fe) {
		c.close(0, "", false)
		return
	}
	why := "protocol_error"
	if fe.code == closeTooBig {
		why = "message_too_big"
	}
	c.g.log.Warn("closing a WebSocket client", "reason", why, "remote", c.conn.RemoteAddr().String(), "uid", c.user, "err", fe.reason)
	if c.g.metrics != nil {
		c.g.metrics.Cuts.WithLabelValues(why).Inc()
	}
	c.close(fe.code, fe.reason, false)
}
