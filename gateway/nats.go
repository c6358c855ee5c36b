package gateway

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/auth"
	"github.com/seed84792017/cellcast/delivery"
	"github.com/seed84792017/cellcast/protocol"
)

// NATS subjects: the protocol's.
const (
	SubjectPub    = protocol.SubjectPub    // cellcast.pub.<dewey tokens> or cellcast.pub.topic.<path tokens>
	SubjectNotify = protocol.SubjectNotify // cellcast.notify.<uid>
	// Requests: cellcast.<op> for each of protocol.RequestOps.
	SubjectPrefix = protocol.SubjectPrefix
	// QueueGroup spreads requests over the brokers sharing a NATS server,
	// so each is handled once.
	QueueGroup = "cellcast"
)

// ServeNATS serves the NATS subjects on nc until the returned stop is
// called; stop drains the subscriptions, finishing the messages taken.
func (g *Gateway) ServeNATS(nc *nats.Conn) (stop func() error, err error) {
	sink := newNATSSink(g, nc)
	g.mu.Lock()
	g.nats = sink
	g.mu.Unlock()
	var subs []*nats.Subscription
	quit, caughtUp, sent := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go sink.catchUps(quit, caughtUp)
	go sink.send(quit, sent)
	stop = func() error {
		close(quit)
		<-caughtUp
		<-sent
		var errs []error
		for _, s := range subs {
			if nc.IsConnected() {
				errs = append(errs, s.Drain())
			} else {
				errs = append(errs, s.Unsubscribe()) // nobody to drain from
			}
		}
		for _, s := range subs {
			for s.IsValid() {
				time.Sleep(5 * time.Millisecond)
			}
		}
		return errors.Join(errs...)
	}
	handle := func(subject string, fn nats.MsgHandler) error {
		s, err := nc.QueueSubscribe(subject, QueueGroup, fn)
		if err == nil {
			// Bursts queue in the client library, not on the server's
			// slow-consumer path; memory is bounded by the limits below.
			err = s.SetPendingLimits(1<<16, 64<<20)
			subs = append(subs, s)
		}
		return err
	}
	if err := handle(SubjectPub+".>", func(m *nats.Msg) { g.serveNATS(sink, m, "publish", strings.TrimPrefix(m.Subject, SubjectPub+".")) }); err != nil {
		stop()
		return nil, err
	}
	for _, op := range protocol.RequestOps() {
		if err := handle(SubjectPrefix+op, func(m *nats.Msg) { g.serveNATS(sink, m, op, "") }); err != nil {
			stop()
			return nil, err
		}
	}
	// A round trip, so the server has the subscriptions before the broker
	// calls itself ready: a request sent right after would find no
	// responders.
	if err := nc.Flush(); err != nil {
		stop()
		return nil, err
	}
	if g.metrics != nil {
		g.metrics.Connections.WithLabelValues("nats").Inc()
	}
	return stop, nil
}

// serveNATS runs one NATS request. where is the cell part of a
// cellcast.pub subject.
func (g *Gateway) serveNATS(sink *natsSink, m *nats.Msg, op, where string) {
	s := &natsSession{out: sink, msg: m}
	data := m.Data
	if len(data) == 0 {
		data = []byte("{}")
	}
	req, e := decodeRequest(data)
	if e == nil {
		e = natsRequest(req, op, where)
	} else {
		req.Op = op // for the metrics
	}
	if e == nil && g.cfg.Auth != nil {
		tok := auth.Bearer(m.Header.Get("Authorization"))
		if tok == "" {
			tok = req.Token
		}
		id, err := g.cfg.Auth.Verify(tok)
		if err != nil {
			e = &Error{Code: CodeUnauthorized, Message: err.Error() + " (send a bearer token in the Authorization header or the token field)"}
		}
		s.user = id.UID
	}
	if !replyAllowed(m.Reply, s.user) {
		// Nothing runs and nothing answers: the reply would land on a
		// subject of someone else's (their inbox, their notifications).
		g.log.Debug("nats request refused: reply subject outside the requester's inbox", "reply", m.Reply, "uid", s.user)
		if g.metrics != nil {
			g.metrics.Requests.WithLabelValues("nats", op, CodeForbidden).Inc()
		}
		return
	}
	if e == nil && (op == "subscribe" || op == "resume") {
		uid := s.user
		if uid == "" {
			uid = req.UID
		}
		if uid != "" && !SubjectSafe(uid) {
			e = errorf(CodeBadRequest, "uid %q cannot name a NATS subject (no '.', '*', '>' or spaces)", uid)
		}
	}
	// A NATS request has no connection of its own: it lives as long as
	// the gateway does (requestContext), and its requester's timeout is
	// the requester's.
	g.serveDecoded(context.Background(), s, req, e)
}

// InboxPrefix is the prefix of a user's NATS reply subjects: requests of
// an authenticated user must ask for replies under "_INBOX.<uid>.", which
// only that user may subscribe to (nats.CustomInboxPrefix(InboxPrefix(uid))).
// Without auth, any "_INBOX." subject will do.
func InboxPrefix(uid string) string { return protocol.InboxPrefix(uid) }

// replyAllowed reports whether the broker may answer on reply for uid
// ("" unauthenticated). No reply subject is fine: nothing is sent.
func replyAllowed(reply, uid string) bool {
	return reply == "" || strings.HasPrefix(reply, InboxPrefix(uid)+".")
}

// natsRequest fills in what the subject says.
func natsRequest(req *Request, op, where string) *Error {
	if req.Op != "" && req.Op != op {
		return errorf(CodeBadRequest, "op %q sent on the subject for %q", req.Op, op)
	}
	req.Op = op
	if where == "" {
		return nil
	}
	if req.Cell != nil || req.Topic != nil || req.Lat != nil || req.Lng != nil {
		return errorf(CodeBadRequest, "the subject names the cell; the body may not")
	}
	if path, ok := strings.CutPrefix(where, "topic."); ok {
		path = strings.ReplaceAll(path, ".", "/")
		req.Topic = &path
		return nil
	}
	req.Cell = &where
	return nil
}

// natsSession answers on the request's reply subject, if it has one.
type natsSession struct {
	out  *natsSink
	msg  *nats.Msg
	user string
}

func (s *natsSession) transport() string   { return "nats" }
func (s *natsSession) uid() string         { return s.user }
func (s *natsSession) sink() delivery.Sink { return s.out }
func (s *natsSession) admit() bool         { return true }
func (s *natsSession) holds(string)        {}
func (s *natsSession) reply(b []byte) {
	if s.msg.Reply != "" {
		s.out.nc.Publish(s.msg.Reply, b)
	}
}

// replyAll publishes every page to the reply subject, in order.
func (s *natsSession) replyAll(frames [][]byte) bool {
	for _, b := range frames {
		s.reply(b)
	}
	return true
}

func (s *natsSession) failed(*Error) {}

func (s *natsSession) replyList(head []byte, key string, items [][]byte) {
	s.reply(withArray(head, key, items))
}

// replyBudget keeps every reply under the server's max payload.
func (s *natsSession) replyBudget(budget int) int {
	if mp := int(s.out.nc.MaxPayload()); mp > 0 {
		return max(1, min(budget, mp-natsHeadroom))
	}
	return budget
}

// natsSink publishes notifications to cellcast.notify.<uid>. NATS routes
// them; a subscriber that is away misses them and resumes. Notify only
// queues (the hub calls it under its route lock, and nats.go writes to
// the socket inline once its buffer fills): a goroutine of its own
// publishes. A notification the queue has no room for, or a publish the
// connection refuses while the queue is held up, makes the subscription
// lag; catchUps replays what it missed once the connection is back.
type natsSink struct {
	g      *Gateway
	nc     *nats.Conn
	lagged atomic.Bool

	mu      sync.Mutex
	publish func(subject string, data []byte) error // nc.Publish; tests hold it up
	queue   []natsMsg
	queued  int // bytes
	kick    chan struct{}
}

type natsMsg struct {
	subject string
	data    []byte
}

// natsQueueBytes bounds what a NATS sink holds for its publisher.
const natsQueueBytes = 64 << 20

func newNATSSink(g *Gateway, nc *nats.Conn) *natsSink {
	return &natsSink{g: g, nc: nc, publish: nc.Publish, kick: make(chan struct{}, 1)}
}

// send publishes what Notify queued, until quit closes (and then what is
// left, while the connection takes it).
func (k *natsSink) send(quit <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		stop := false
		select {
		case <-k.kick:
		case <-quit:
			stop = true
		}
		k.mu.Lock()
		out, publish := k.queue, k.publish
		k.queue, k.queued = nil, 0
		k.mu.Unlock()
		for _, m := range out {
			if publish(m.subject, m.data) != nil {
				// Gone: the subscriber sees the hole in its Prev chain
				// and resumes, as after any NATS loss.
				if mt := k.g.metrics; mt != nil {
					mt.QueueDrops.Inc()
				}
			}
		}
		if stop {
			return
		}
	}
}

// catchUpEvery is how often the NATS sink looks for lagging subscriptions.
const catchUpEvery = 100 * time.Millisecond

// catchUps has the service replay what lagging subscriptions missed, while
// the connection is up, until quit closes.
func (k *natsSink) catchUps(quit <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(catchUpEvery)
	defer t.Stop()
	for {
		select {
		case <-quit:
			return
		case <-t.C:
		}
		if !k.nc.IsConnected() || !k.lagged.Swap(false) {
			continue
		}
		if !k.g.begin() {
			return
		}
		if _, err := k.g.svc.CatchUp(k.g.ctx, k); err != nil {
			k.g.log.Error("catching NATS subscribers up", "err", err)
			k.lagged.Store(true)
		}
		k.g.ops.Done()
	}
}

// enqueue queues a message for send, unless the queue is full or the
// connection is down.
func (k *natsSink) enqueue(subject string, data []byte) bool {
	k.mu.Lock()
	full := k.queued+len(data) > natsQueueBytes || !k.nc.IsConnected()
	if !full {
		k.queue = append(k.queue, natsMsg{subject, data})
		k.queued += len(data)
	}
	k.mu.Unlock()
	if full {
		if m := k.g.metrics; m != nil {
			m.QueueDrops.Inc()
		}
		return false
	}
	select {
	case k.kick <- struct{}{}:
	default:
	}
	return true
}

func (k *natsSink) Notify(n *delivery.Notification) bool {
	if !k.enqueue(SubjectNotify+"."+n.Uid, notificationFrame(n)) {
		k.lagged.Store(true)
		return false
	}
	if m := k.g.metrics; m != nil {
		m.Notifications.WithLabelValues("nats").Inc()
		if !n.Replayed {
			m.PushLatency.Observe(time.Since(time.Unix(0, n.Pub.Tp)).Seconds())
		}
	}
	return true
}
