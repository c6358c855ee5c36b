package gateway

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
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

// frame is one queued message: a reply, or a notification with its
// publication stamp for the latency histogram.
type frame struct {
	data []byte
	tp   int64
}

// wsConn is one WebSocket client. Its reader serves requests one at a
// time; its writer drains the bounded queue. Nothing else writes data
// frames, and nothing blocks on a full queue: the connection is cut.
type wsConn struct {
	g    *Gateway
	ws   *websocket.Conn
	user string
	out  chan frame
	lim  *rate.Limiter

	mu   sync.Mutex
	sids map[string]struct{}

	once     sync.Once
	closed   chan struct{} // closed when the connection is ending
	code     int
	reason   string
	drain    bool // the writer sends what is queued before closing
	readDone chan struct{}
}

var upgrader = websocket.Upgrader{ReadBufferSize: 16 << 10, WriteBufferSize: 64 << 10}

// ServeWS upgrades an HTTP request to a WebSocket client. With auth on,
// the bearer token comes in the Authorization header or, for browsers,
// which cannot set it, in the token query parameter.
func (g *Gateway) ServeWS(w http.ResponseWriter, r *http.Request) {
	var uid string
	if g.cfg.Auth != nil {
		tok := auth.Bearer(r.Header.Get("Authorization"))
		if tok == "" {
			tok = r.URL.Query().Get("token")
		}
		var err error
		if uid, err = g.cfg.Auth.Verify(tok); err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write(errorFrame(nil, &Error{CodeUnauthorized, err.Error()}))
			return
		}
	}
	g.mu.Lock()
	closing := g.closing
	g.mu.Unlock()
	if closing {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered
	}
	c := &wsConn{g: g, ws: ws, user: uid, out: make(chan frame, g.limits.SendQueue),
		lim: rate.NewLimiter(rate.Limit(g.limits.Rate), g.limits.Burst), sids: map[string]struct{}{},
		closed: make(chan struct{}), readDone: make(chan struct{})}
	g.mu.Lock()
	if g.closing {
		g.mu.Unlock()
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
	go c.write()
	c.read()
}

func (c *wsConn) transport() string   { return "ws" }
func (c *wsConn) uid() string         { return c.user }
func (c *wsConn) sink() delivery.Sink { return c }
func (c *wsConn) reply(b []byte)      { c.enqueue(frame{data: b}) }
func (c *wsConn) Lost(sid string)     { c.mu.Lock(); delete(c.sids, sid); c.mu.Unlock() }
func (c *wsConn) holds(sid string)    { c.mu.Lock(); c.sids[sid] = struct{}{}; c.mu.Unlock() }
func (c *wsConn) admit() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sids) < c.g.limits.MaxSubscriptions
}

// Notify implements delivery.Sink.
func (c *wsConn) Notify(n *delivery.Notification) bool {
	return c.enqueue(frame{data: notificationFrame(n), tp: n.Pub.Tp})
}

func (c *wsConn) enqueue(f frame) bool {
	select {
	case <-c.closed:
		return false
	default:
	}
	select {
	case c.out <- f:
		return true
	default:
		if c.g.metrics != nil {
			c.g.metrics.QueueDrops.Inc()
		}
		c.close(closeSlow, "slow consumer: send queue full; reconnect and resume", false)
		return false
	}
}

// close ends the connection once. It never blocks: the writer does the
// closing handshake.
func (c *wsConn) close(code int, reason string, drain bool) {
	c.once.Do(func() {
		c.code, c.reason, c.drain = code, reason, drain
		if code == closeSlow && c.g.metrics != nil {
			c.g.metrics.SlowCuts.Inc()
		}
		close(c.closed)
	})
}

func (c *wsConn) read() {
	defer func() {
		close(c.readDone)
		c.close(websocket.CloseNormalClosure, "", false)
	}()
	max := c.g.limits.MaxFrame
	// Frames up to 16× the limit are read and refused with an error; past
	// that the connection closes (1009), so nobody streams endless data.
	c.ws.SetReadLimit(int64(max) * 16)
	c.ws.SetReadDeadline(time.Now().Add(pongWait))
	c.ws.SetPongHandler(func(string) error { return c.ws.SetReadDeadline(time.Now().Add(pongWait)) })
	buf := make([]byte, 0, 4096)
	for {
		_, r, err := c.ws.NextReader()
		if err != nil {
			return
		}
		c.ws.SetReadDeadline(time.Now().Add(pongWait))
		buf, err = readAtMost(r, buf[:0], max)
		switch {
		case errors.Is(err, errTooLarge):
			if _, err := io.Copy(io.Discard, r); err != nil {
				return
			}
			c.reply(errorFrame(nil, errorf(CodeTooLarge, "request over %d bytes", max)))
			c.count("other", CodeTooLarge)
			continue
		case err != nil:
			return
		}
		if !c.lim.Allow() {
			req, _ := decodeRequest(buf)
			c.reply(errorFrame(req.ID, errorf(CodeOverloaded, "over %g requests per second; slow down", c.g.limits.Rate)))
			c.count("other", CodeOverloaded)
			continue
		}
		c.g.serve(context.Background(), c, buf)
	}
}

func (c *wsConn) count(op, outcome string) {
	if c.g.metrics != nil {
		c.g.metrics.Requests.WithLabelValues("ws", op, outcome).Inc()
	}
}

var errTooLarge = errors.New("frame too large")

// readAtMost reads r into buf, failing with errTooLarge past max bytes.
func readAtMost(r io.Reader, buf []byte, max int) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > max {
			return buf, errTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

func (c *wsConn) write() {
	g := c.g
	defer func() {
		c.ws.Close()
		<-c.readDone
		g.mu.Lock()
		delete(g.conns, c)
		g.mu.Unlock()
		c.mu.Lock()
		sids := c.sids
		c.sids = nil
		c.mu.Unlock()
		for sid := range sids {
			g.hub.Detach(sid, c)
		}
		if g.metrics != nil {
			g.metrics.Connections.WithLabelValues("ws").Dec()
		}
		g.writers.Done()
	}()
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	for {
		select {
		case f := <-c.out:
			if !c.send(f) {
				return
			}
		case <-ping.C:
			if c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(g.limits.WriteTimeout)) != nil {
				return
			}
		case <-c.closed:
			if c.drain {
				for len(c.out) > 0 {
					if !c.send(<-c.out) {
						return
					}
				}
			}
			if c.code != websocket.CloseNormalClosure {
				c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(c.code, c.reason), time.Now().Add(time.Second))
			}
			return
		}
	}
}

func (c *wsConn) send(f frame) bool {
	c.ws.SetWriteDeadline(time.Now().Add(c.g.limits.WriteTimeout))
	if err := c.ws.WriteMessage(websocket.TextMessage, f.data); err != nil {
		return false
	}
	if f.tp != 0 && c.g.metrics != nil {
		c.g.metrics.Notifications.WithLabelValues("ws").Inc()
		c.g.metrics.PushLatency.Observe(time.Since(time.Unix(0, f.tp)).Seconds())
	}
	return true
}
