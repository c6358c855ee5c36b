package gateway

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/time/rate"

	"github.com/seed84792017/cellcast/auth"
	"github.com/seed84792017/cellcast/delivery"
)

// Close codes the broker sends.
const (
	closeGoingAway = websocket.CloseGoingAway     // shutdown
	closeSlow      = websocket.CloseTryAgainLater // send queue full
)

const (
	pingEvery = 30 * time.Second
	pongWait  = 75 * time.Second
)

// frame is one queued message: a reply or (op not zero) a control frame
// in data, or a notification — sid, seq and the publication's shared body,
// rendered only as it is written, and its stamp for the latency histogram.
type frame struct {
	data []byte
	op   byte
	bin  bool // a binary frame: CBOR (cbor.go)
	sid  string
	seq  int64
	tp   int64
	// replayed: a notification from the store, whose age is not the
	// push latency.
	replayed bool
	// list, when set, are the rendered items of a reply's list: data is
	// the reply up to the list's '[' (replylist.go).
	list [][]byte
}

// size is the frame's payload length.
func (f *frame) size() int {
	if f.list != nil {
		return len(f.data) + listBytes(f.list) + len(listEnd)
	}
	if f.tp == 0 {
		return len(f.data)
	}
	if f.bin {
		return notificationCBORSize(f.sid, f.seq, f.data)
	}
	var digits [20]byte
	return len(notePrefix) + len(f.sid) + len(noteMiddle) + len(strconv.AppendInt(digits[:0], f.seq, 10)) +
		len(noteKey) + len(f.data) + len(noteSuffix)
}

// queued is what the frame counts against its queue's byte bound: the
// payload, but only once a notification's publication, which its
// notifications share.
func (f *frame) queued() int {
	if f.list != nil {
		return len(f.data) + listBytes(f.list)
	}
	return len(f.data)
}

// wsConn is one WebSocket client. Its reader serves requests in order,
// several at a time (pipeline.go); its writer drains the bounded queue. Nothing blocks on a full
// queue. A notification that does not fit is refused, and the hub skips
// the subscription until the queue has drained to half, when the writer
// has the hub replay what it missed from the store (Hub.CatchUp): a
// client that reads slowly falls behind but loses nothing. A reply that
// does not fit even its larger room, or a write that stalls for the write
// timeout, means the client has stopped reading: it is cut.
//
// gorilla/websocket reads frames and does the handshake, but the writer
// frames messages itself into a buffer and flushes once per burst: one
// write(2) per message cost half the broker's CPU at 150k notifications/s.
// So the writer is the only one to write to the socket; pongs and the
// close reply go through the queue too.
type wsConn struct {
	g    *Gateway
	conn net.Conn // gorilla/websocket does the handshake; the broker frames both ways itself
	fd   int32    // conn's descriptor, for the idle poller; -1: none
	one  [1]byte  // what an idle reader waits on where it cannot park
	// The reader's state, which outlives its goroutine while parked:
	// the requests in flight, the message being joined, and when the
	// client last sent anything.
	pipe     *pipeline
	msg      message
	lastRead atomic.Int64
	sw       *stallWriter
	user     string
	tok      string // the bearer token, checked again on reload (Reverify)
	q        *sendQueue
	lim      *rate.Limiter
	// bin: the client speaks cellcast.cbor, in binary frames both ways.
	bin bool
	// grouped: the client asked for a publication's notifications to its
	// subscriptions on this connection in one frame (grouped.go).
	grouped bool

	mu   sync.Mutex
	sids map[string]struct{} // nil once the connection is finished
	// stopWatch stops the token's expiry timer; finish calls it.
	stopWatch func()

	// lagged: a notification was refused since the last catch-up began;
	// catching: a catch-up runs (one at a time per connection).
	lagged, catching atomic.Bool

	pinger *time.Timer // queues a ping every pingEvery
	once   sync.Once
	closed chan struct{} // closed when the connection is ending
	// ctx is its requests' context: it ends with the connection, when
	// their replies can no longer reach the client.
	ctx      context.Context
	cancel   context.CancelFunc
	code     int
	reason   string
	drain    bool // the writer sends what is queued before closing
	readDone chan struct{}
}

// ServeWS upgrades an HTTP request to a WebSocket client. With auth on,
// the bearer token comes in the Authorization header or, for browsers,
// which cannot set it, in the token query parameter.
func (g *Gateway) ServeWS(w http.ResponseWriter, r *http.Request) {
	var id auth.Identity
	var tok string
	if g.cfg.Auth != nil {
		tok = auth.Bearer(r.Header.Get("Authorization"))
		if tok == "" {
			tok = r.URL.Query().Get("token")
		}
		var err error
		if id, err = g.cfg.Auth.Verify(tok); err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write(errorFrame(nil, &Error{Code: CodeUnauthorized, Message: err.Error()}))
			return
		}
	}
	grouped, err := groupedNotifications(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorFrame(nil, &Error{Code: CodeBadRequest, Message: err.Error()}))
		return
	}
	g.mu.Lock()
	closing := g.closing
	g.mu.Unlock()
	if closing {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	uid := id.UID
	if e := g.users.connect(uid); e != nil {
		writeJSON(w, http.StatusTooManyRequests, errorFrame(nil, e))
		return
	}
	proto := subprotocol(r)
	var hdr http.Header
	if proto != "" {
		hdr = http.Header{"Sec-Websocket-Protocol": {proto}}
	}
	ws, err := g.upgrader.Upgrade(w, r, hdr)
	if err != nil {
		g.users.disconnect(uid)
		return // the upgrader has answered
	}
	raw := ws.NetConn()
	c := &wsConn{g: g, conn: raw, fd: socketFD(raw), sw: &stallWriter{conn: raw}, user: uid, tok: tok, pipe: newPipeline(), msg: message{max: 16 * g.limits.MaxFrame},
		lim: rate.NewLimiter(rate.Limit(g.limits.Rate), g.limits.Burst), sids: map[string]struct{}{},
		closed: make(chan struct{}), readDone: make(chan struct{}), bin: proto == SubprotocolCBOR, grouped: grouped}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.q = newSendQueue(g.limits.SendQueue, g.limits.SendQueueBytes, func() { go c.writer() })
	c.lastRead.Store(time.Now().UnixNano())
	c.pinger = time.AfterFunc(pingEvery, c.ping) // before anything may finish the connection
	g.mu.Lock()
	if g.closing {
		g.mu.Unlock()
		c.pinger.Stop()
		g.users.disconnect(uid)
		ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(closeGoingAway, "shutting down"), time.Now().Add(time.Second))
		ws.Close()
		return
	}
	g.conns[c] = struct{}{}
	g.writers.Add(1)
	g.mu.Unlock()
	if g.metrics != nil {
		g.metrics.Connections.WithLabelValues("ws").Inc()
	}
	// A goroutine of its own, so that the HTTP server's request, response
	// and write buffer, which its goroutine holds while the handler runs,
	// go now.
	stop := c.watchToken(id.Expires)
	c.mu.Lock()
	if c.sids == nil { // finished already
		c.mu.Unlock()
		stop()
	} else {
		c.stopWatch = stop
		c.mu.Unlock()
	}
	go c.read(false)
}

func (c *wsConn) reply(b []byte) { c.enqueueReply(c.dataFrame(b)) }

// enqueueReply queues a reply, waiting while the queue has no room for it:
// a client that reads is slowed (its requests wait, then its reader, then
// TCP), never cut. One whose queue does not move for the write timeout is
// not reading, and is cut.
func (c *wsConn) enqueueReply(f frame) {
	fs := []frame{f}
	var timeout <-chan time.Time
	for {
		ok, taken := c.q.pushAllOrWait(fs, roomReply, true)
		if ok {
			return
		}
		if timeout == nil {
			t := time.NewTimer(c.g.limits.WriteTimeout)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-taken:
		case <-c.closed:
			return
		case <-timeout:
			c.cut(closeSlow, "send_queue_full", "not reading: send queue full; reconnect and resume")
			return
		}
	}
}
func (c *wsConn) replyAll(data [][]byte) bool {
	select {
	case <-c.closed:
		return true // nobody to page for
	default:
	}
	fs := make([]frame, len(data))
	for i, b := range data {
		fs[i] = c.dataFrame(b)
	}
	return c.q.pushAll(fs, roomReply)
}
func (c *wsConn) holds(sid string) { c.mu.Lock(); c.sids[sid] = struct{}{}; c.mu.Unlock() }
func (c *wsConn) admit() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sids) < c.g.limits.MaxSubscriptions
}

// Notify implements delivery.Sink. A full queue refuses the notification
// without cutting the client: the hub replays it on catch-up.
func (c *wsConn) Notify(n *delivery.Notification) bool {
	select {
	case <-c.closed:
		return false
	default:
	}
	f := frame{data: n.Body, sid: n.Sid, seq: n.Seq, tp: n.Pub.Tp, replayed: n.Replayed}
	if c.bin {
		f.data, f.bin = c.g.loc.EncodePublicationCBOR(n.Pub), true
	}
	if c.q.push(f, roomNotification) {
		return true
	}
	if c.g.metrics != nil {
		c.g.metrics.QueueDrops.Inc()
	}
	c.lagged.Store(true)
	return false
}

// NotifyBatch implements delivery.BatchSink: a publication's
// notifications to this connection's subscriptions, queued under one lock,
// its body rendered in the connection's encoding once. What does not fit
// is refused as Notify refuses it.
func (c *wsConn) NotifyBatch(ns []delivery.Notification) int {
	if len(ns) == 0 {
		return 0
	}
	select {
	case <-c.closed:
		return 0
	default:
	}
	data, bin := ns[0].Body, false
	if c.bin {
		data, bin = c.g.loc.EncodePublicationCBOR(ns[0].Pub), true
	}
	k := c.q.pushNotes(ns, data, bin)
	if k < len(ns) {
		if c.g.metrics != nil {
			c.g.metrics.QueueDrops.Add(float64(len(ns) - k))
		}
		c.lagged.Store(true)
	}
	return k
}

// dataFrame is the frame of a JSON reply in the connection's encoding.
func (c *wsConn) dataFrame(b []byte) frame {
	if !c.bin {
		return frame{data: b}
	}
	out, err := appendCBOR(make([]byte, 0, len(b)), b)
	if err != nil {
		// Replies are encoding/json's or spliced from it: always JSON.
		panic(err)
	}
	return frame{data: out, bin: true}
}

// catchUp has the hub replay what the connection's lagging subscriptions
// missed, once its queue has drained to half. The writer calls it after
// each burst.
func (c *wsConn) catchUp() {
	if !c.lagged.Load() || !c.q.low() || !c.catching.CompareAndSwap(false, true) {
		return
	}
	if !c.g.begin() {
		c.catching.Store(false)
		return
	}
	c.lagged.Store(false)
	go func() {
		defer c.g.ops.Done()
		if _, err := c.g.svc.CatchUp(c.g.ctx, c); err != nil {
			c.g.log.Error("catching a lagging client up", "err", err)
			c.lagged.Store(true) // try again after the next burst
		}
		c.catching.Store(false)
		c.catchUp() // in case it lagged again meanwhile
	}()
}

// cut closes a client that stopped reading, with a close frame when the
// stream allows one, a log line and a metric by reason.
func (c *wsConn) cut(code int, why, reason string) {
	select {
	case <-c.closed:
		return
	default:
	}
	c.g.log.Warn("cutting a WebSocket client", "reason", why, "remote", c.conn.RemoteAddr().String(), "uid", c.user)
	if c.g.metrics != nil {
		c.g.metrics.Cuts.WithLabelValues(why).Inc()
	}
	c.close(code, reason, false)
}

// close ends the connection once. It never blocks: the writer does the
// closing handshake.
func (c *wsConn) close(code int, reason string, drain bool) {
	c.once.Do(func() {
		c.code, c.reason, c.drain = code, reason, drain
		close(c.closed)
		c.cancel()
		c.q.close()
	})
}

func (c *wsConn) count(op, outcome string) {
	if c.g.metrics != nil {
		c.g.metrics.Requests.WithLabelValues("ws", op, outcome).Inc()
	}
}
