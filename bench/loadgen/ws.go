package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/seed84792017/cellcast/bench/workload"
	"github.com/seed84792017/cellcast/subscriptions"
)

// wsConn is one WebSocket connection carrying many users' requests.
type wsConn struct {
	r     *run
	url   string
	tasks chan task

	wmu sync.Mutex // serializes writes
	ws  *websocket.Conn

	mu      sync.Mutex
	next    int
	pending map[string]func(*reply)
	pages   pages            // paged replies still arriving, under mu
	last    map[string]int64 // sid → highest sequence number received
	held    map[string]int64 // sid → end, the subscriptions made or resumed here
	window  chan struct{}

	readDone chan struct{}
	notes    []note // written by the reader only
	// lost is set when the broker closed the connection (a slow consumer
	// is cut, for one); the next task reconnects and resumes.
	lost     atomic.Bool
	lostCh   chan struct{} // signals lost to serve
	stopping atomic.Bool
}

func dialWS(r *run, url string) (*wsConn, error) {
	c := &wsConn{r: r, url: url, tasks: make(chan task, 1<<14), pending: map[string]func(*reply){},
		last: map[string]int64{}, held: map[string]int64{}, window: make(chan struct{}, r.cfg.Window), lostCh: make(chan struct{}, 1)}
	if err := c.dial(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *wsConn) dial() error {
	d := websocket.Dialer{ReadBufferSize: 64 << 10, WriteBufferSize: 16 << 10, HandshakeTimeout: 10 * time.Second}
	ws, _, err := d.Dial(c.url, nil)
	if err != nil {
		return fmt.Errorf("loadgen: dial %s: %w", c.url, err)
	}
	c.ws, c.readDone = ws, make(chan struct{})
	c.lost.Store(false)
	go c.read(ws, c.readDone)
	return nil
}

func closeAll(cs []*wsConn) {
	for _, c := range cs {
		if c != nil {
			c.stop()
		}
	}
}

// stop closes the connection and waits for its reader.
func (c *wsConn) stop() {
	c.stopping.Store(true)
	c.ws.Close()
	<-c.readDone
}

// serve sends the connection's tasks until they end, drains the replies
// and calls done; until the run quits, it also reconnects (and resumes)
// whenever the broker closes the connection, so notifications still on
// their way are not lost.
func (c *wsConn) serve(ctx context.Context, done func()) {
	defer c.r.exited.Done()
	tasks := c.tasks
	for {
		select {
		case t, ok := <-tasks:
			if !ok {
				c.drain()
				done()
				tasks = nil
				continue
			}
			if ctx.Err() != nil {
				continue
			}
			if t.cut {
				c.cut()
				continue
			}
			c.do(t)
		case <-c.lostCh:
			// A cut that raced with the broker's close has already
			// reconnected: the signal is stale and the connection live.
			if c.lost.Load() {
				c.drain()
				c.reconnect()
			}
			c.r.reconnecting.Add(-1)
		case <-c.r.quit:
			return
		}
	}
}

// do sends an operation.
func (c *wsConn) do(t task) {
	t.sent()
	c.r.sent.Add(1)
	id := c.id()
	if t.op.Kind == workload.Subscribe {
		c.send(id, request(t.op, id), func(rep *reply) {
			c.r.subscribed(t, rep)
			if rep.Op == "subscribed" {
				c.mu.Lock()
				c.held[rep.Sid] = c.r.subs[t.index].tmax
				c.mu.Unlock()
			}
		})
		return
	}
	c.send(id, request(t.op, id), func(rep *reply) { c.r.published(t, rep) })
}

func (c *wsConn) id() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	return strconv.Itoa(c.next)
}

// send writes a request once the window has room; cb gets its reply on
// the reader.
func (c *wsConn) send(id string, req []byte, cb func(*reply)) {
	c.window <- struct{}{}
	c.mu.Lock()
	if c.lost.Load() { // the reader has already failed what was pending
		c.mu.Unlock()
		<-c.window
		cb(&reply{Op: "error", Code: "transport", Message: "connection lost"})
		return
	}
	c.pending[id] = cb
	c.mu.Unlock()
	c.wmu.Lock()
	err := c.ws.WriteMessage(websocket.TextMessage, req)
	c.wmu.Unlock()
	if err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		<-c.window
		cb(&reply{Op: "error", Code: "transport", Message: err.Error()})
	}
}

// drain waits until no request is in flight.
func (c *wsConn) drain() {
	for range cap(c.window) {
		c.window <- struct{}{}
	}
	for range cap(c.window) {
		<-c.window
	}
}

// cut drops the connection between requests and reconnects.
func (c *wsConn) cut() {
	c.drain()
	c.stopping.Store(true)
	c.ws.NetConn().Close() // abruptly: no closing handshake
	<-c.readDone
	c.stopping.Store(false)
	c.r.drops.Add(1)
	c.reconnect()
}

// reconnect dials again and resumes every subscription held here from the
// last sequence number that arrived.
func (c *wsConn) reconnect() {
	<-c.readDone
	if err := c.dial(); err != nil {
		c.r.fail("redial", err.Error())
		return
	}
	now := time.Now().UnixNano()
	c.mu.Lock()
	type resume struct {
		sid        string
		after, end int64
	}
	var rs []resume
	for sid, end := range c.held {
		if end+int64(subscriptions.ResumeGrace) < now {
			delete(c.held, sid)
			continue
		}
		rs = append(rs, resume{sid, c.last[sid], end})
	}
	c.mu.Unlock()
	for _, x := range rs {
		id := c.id()
		req, _ := json.Marshal(map[string]any{"id": id, "op": "resume", "sid": x.sid, "after": x.after})
		c.send(id, req, func(rep *reply) {
			switch {
			case rep.Op == "resumed":
				c.r.resumes.Add(1)
			case rep.Code == "not_found" && x.end+int64(subscriptions.ResumeGrace) < time.Now().UnixNano():
				// It ended while the resume was on its way; if it was
				// owed anything, completeness says so.
				c.r.lateResumes.Add(1)
			default:
				c.r.fail("resume: "+rep.Code, rep.Message)
			}
		})
	}
	c.drain()
}

var (
	notePrefix = []byte(`{"op":"notification","sid":"`)
	seqKey     = []byte(`"seq":`)
	pidKey     = []byte(`"pid":"`)
)

// read sorts what arrives into notifications and replies. If the broker
// ends the connection, it fails the requests still waiting for replies.
func (c *wsConn) read(ws *websocket.Conn, done chan struct{}) {
	defer close(done)
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			if !c.stopping.Load() {
				c.closedByBroker(err)
			}
			return
		}
		if bytes.HasPrefix(data, notePrefix) {
			if !c.notification(data) {
				c.r.fail("bad notification", fmt.Sprintf("%.200q", data))
			}
			continue
		}
		rep := &reply{}
		if err := json.Unmarshal(data, rep); err != nil {
			c.r.fail("bad frame", fmt.Sprintf("%.200q", data))
			continue
		}
		c.mu.Lock()
		rep, whole := c.pages.add(rep)
		if !whole {
			c.mu.Unlock()
			continue
		}
		cb := c.pending[rep.ID]
		delete(c.pending, rep.ID)
		c.mu.Unlock()
		if cb == nil {
			c.r.fail("unexpected frame", fmt.Sprintf("%.200q", data))
			continue
		}
		cb(rep)
		<-c.window // after cb: drain must see its effects
	}
}

func (c *wsConn) closedByBroker(err error) {
	why := err.Error()
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		why = fmt.Sprintf("%d %s", ce.Code, ce.Text)
	}
	c.r.brokerCut(why)
	c.r.reconnecting.Add(1)
	c.lost.Store(true)
	c.mu.Lock()
	pending := c.pending
	c.pending = map[string]func(*reply){}
	c.mu.Unlock()
	for _, cb := range pending {
		cb(&reply{Op: "error", Code: "transport", Message: "connection lost before the reply"})
		<-c.window
	}
	c.lostCh <- struct{}{}
}

// notification files one without a full JSON decode.
func (c *wsConn) notification(data []byte) bool {
	now := time.Now().UnixNano()
	rest := data[len(notePrefix):]
	i := bytes.IndexByte(rest, '"')
	j := bytes.Index(rest, seqKey)
	k := bytes.Index(rest, pidKey)
	if i < 0 || j < 0 || k < 0 {
		return false
	}
	sid := string(rest[:i])
	num := rest[j+len(seqKey):]
	if e := bytes.IndexByte(num, ','); e >= 0 {
		num = num[:e]
	}
	seq, err := strconv.ParseInt(string(num), 10, 64)
	pid := rest[k+len(pidKey):]
	if e := bytes.IndexByte(pid, '"'); err != nil || e < 0 {
		return false
	} else {
		pid = pid[:e]
	}
	c.mu.Lock()
	c.last[sid] = max(c.last[sid], seq)
	c.mu.Unlock()
	c.notes = append(c.notes, note{ts: stamp(sid), tp: stamp(string(pid)), at: now})
	c.r.notes.Add(1)
	return true
}
