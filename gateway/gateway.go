package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/seed84792017/cellcast/auth"
	"github.com/seed84792017/cellcast/delivery"
	"github.com/seed84792017/cellcast/protocol"
	"github.com/seed84792017/cellcast/service"
	"github.com/seed84792017/cellcast/subscriptions"
)

// DefaultUserConnections is Limits.UserConnections unless set.
const DefaultUserConnections = 64

// Limits bound what one client may do. Zero fields take the defaults.
type Limits struct {
	MaxFrame         int           // request bytes; default 64 KiB
	MaxSubscriptions int           // live subscriptions per connection; default 10,000
	Rate             float64       // requests per second per connection; default 2,000
	Burst            int           // default 4,000
	SendQueue        int           // notifications and replies queued per connection; default 16,384
	SendQueueBytes   int           // and their bytes; default 8 MiB
	WriteTimeout     time.Duration // default 10 s
	// ReplyBudget bounds a reply in bytes: past results beyond it arrive
	// in pages (paging.go); default 256 KiB.
	ReplyBudget int

	// Per-user quotas, across every transport and connection, for
	// authenticated users (quota.go).
	UserRate          float64 // requests per second; default 1,000
	UserBurst         int     // default 2,000
	UserSubscriptions int     // live subscriptions; default 50,000
	UserConnections   int     // WebSocket connections, and NATS ones on the embedded server; default 64
	UserNewTopics     int     // topics created per minute; default 60
	// MaxTopics caps the topic registry, for every user together;
	// default 100,000.
	MaxTopics int
}

func (l Limits) withDefaults() Limits {
	if l.MaxFrame == 0 {
		l.MaxFrame = 64 << 10
	}
	if l.MaxSubscriptions == 0 {
		l.MaxSubscriptions = 10_000
	}
	if l.Rate == 0 {
		l.Rate = 2000
	}
	if l.Burst == 0 {
		l.Burst = 4000
	}
	if l.SendQueue == 0 {
		l.SendQueue = 16 << 10
	}
	if l.SendQueueBytes == 0 {
		l.SendQueueBytes = 8 << 20
	}
	if l.WriteTimeout == 0 {
		l.WriteTimeout = 10 * time.Second
	}
	if l.ReplyBudget == 0 {
		l.ReplyBudget = 256 << 10
	}
	if l.UserRate == 0 {
		l.UserRate = 1000
	}
	if l.UserBurst == 0 {
		l.UserBurst = 2000
	}
	if l.UserSubscriptions == 0 {
		l.UserSubscriptions = 50_000
	}
	if l.UserConnections == 0 {
		l.UserConnections = DefaultUserConnections
	}
	if l.UserNewTopics == 0 {
		l.UserNewTopics = 60
	}
	if l.MaxTopics == 0 {
		l.MaxTopics = 100_000
	}
	return l
}

// Core is what the gateway needs of the pub/sub core: the operations of
// service.Service, whose documentation they share. A cluster node
// (package cluster) provides the same operations over the shards of
// several nodes.
type Core interface {
	Limits() subscriptions.Limits
	Subscribe(ctx context.Context, req *subscriptions.SubscribeRequest, sink delivery.Sink, answer func(*subscriptions.SubscribeResult, string)) error
	Publish(ctx context.Context, req *subscriptions.PublishRequest, answer func(*subscriptions.PublishResult)) error
	Unsubscribe(ctx context.Context, sid, owner string, stamped subscriptions.Stamped) error
	Resume(ctx context.Context, sid string, after int64, owner string, sink delivery.Sink, answer func(*subscriptions.ReplayResult)) error
	CatchUp(ctx context.Context, sink delivery.Sink) (int, error)
	// Detach stops routing the subscriptions sids to sink, which is
	// going away (a connection closing detaches all of its at once).
	Detach(sids []string, sink delivery.Sink)
	Query(ctx context.Context, q service.Query) ([]subscriptions.Publication, error)
	// Drain waits until every publication released so far is dispatched.
	Drain()
}

// Config shapes a Gateway.
type Config struct {
	// Service runs the operations; the gateway does not close it. A
	// *service.Service on one node, a cluster node's router in a cluster.
	Service Core
	// Locator maps locations to cells and renders publications; it must
	// be the one whose EncodePublication the service renders with.
	Locator *Locator
	// Auth verifies bearer tokens; nil runs open: requests name their uid.
	Auth    auth.Verifier
	Limits  Limits
	Metrics *Metrics
	Log     *slog.Logger
	// AllowedOrigins are the origins of web pages, besides the broker's
	// own, that may open a WebSocket ("https://example.org", or "*").
	AllowedOrigins []string
}

// Gateway serves clients over WebSocket, NATS and HTTP.
type Gateway struct {
	cfg     Config
	limits  Limits
	svc     Core
	loc     *Locator
	log     *slog.Logger
	metrics *Metrics
	// upgrader checks a WebSocket's origin (origin.go).
	upgrader *websocket.Upgrader

	mu      sync.Mutex
	closing bool
	conns   map[*wsConn]struct{}
	ops     sync.WaitGroup // requests being served
	writers sync.WaitGroup // WebSocket writers still draining
	work    *workers       // the goroutines WebSocket requests run on
	cursors *cursorStore   // the pages of paged replies that clients pull
	users   *users         // per-user quotas
	nats    *natsSink      // ServeNATS's, once it runs
	// ctx ends when Close runs out of time: running requests stop.
	ctx    context.Context
	cancel context.CancelFunc
}

// New returns a gateway in front of cfg.Service.
func New(cfg Config) *Gateway {
	g := &Gateway{cfg: cfg, limits: cfg.Limits.withDefaults(), svc: cfg.Service, loc: cfg.Locator, log: cfg.Log, metrics: cfg.Metrics,
		conns: map[*wsConn]struct{}{}, cursors: newCursorStore(nil), upgrader: newUpgrader(cfg.AllowedOrigins), work: newWorkers()}
	g.users = newUsers(g.limits)
	g.ctx, g.cancel = context.WithCancel(context.Background())
	if g.log == nil {
		g.log = slog.Default()
	}
	return g
}

// session is one client as a request sees it.
type session interface {
	transport() string
	// uid is the authenticated user, "" when the broker runs open.
	uid() string
	// sink receives the notifications of the subscriptions this client
	// makes or resumes.
	sink() delivery.Sink
	// admit reports whether one more subscription fits the client's limit.
	admit() bool
	// holds records that sid now routes to the client.
	holds(sid string)
	replier
}

// replier sends a request's replies. Every way to reply is a method here,
// so a WebSocket's orderedReplies, which makes each wait for the previous
// request's replies, must implement it: no reply can skip the order.
type replier interface {
	// reply queues a reply frame.
	reply(b []byte)
	// replyAll queues every frame, in order, or none of them (false: the
	// queue cannot take them, or the transport cannot push pages and its
	// client pulls them by cursor).
	replyAll(frames [][]byte) bool
	// replyList queues head, an encoded reply object, with "key": the
	// items as a JSON array, as withArray would join them.
	replyList(head []byte, key string, items [][]byte)
	// replyBudget bounds a reply below budget where the transport must.
	replyBudget(budget int) int
	// failed hears a request's error before its error frame is sent.
	failed(e *Error)
}

// begin counts a request as being served, unless the gateway is closing.
func (g *Gateway) begin() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closing {
		return false
	}
	g.ops.Add(1)
	return true
}

// serve decodes and runs one request, answering on s; stamped hears when
// it has its place.
func (g *Gateway) serve(ctx context.Context, s session, data []byte, stamped subscriptions.Stamped) {
	req, e := decodeRequest(data)
	req.stamped = stamped
	g.serveDecoded(ctx, s, req, e)
}

// serveDecoded runs req unless decoding it failed with e, answering on s.
func (g *Gateway) serveDecoded(ctx context.Context, s session, req *Request, e *Error) {
	if e == nil {
		e = g.users.allow(s.uid())
	}
	if e == nil {
		if !g.begin() {
			e = CodeOf(errClosing)
		} else {
			rctx, done := g.requestContext(ctx)
			e = g.run(rctx, s, req)
			done()
			g.ops.Done()
		}
	}
	outcome := "ok"
	if e != nil {
		outcome = e.Code
		s.failed(e)
		s.reply(errorFrame(req.ID, e))
	}
	if g.metrics != nil {
		op := req.Op
		switch op {
		case protocol.OpSubscribe, protocol.OpPublish, protocol.OpUnsubscribe, protocol.OpResume, protocol.OpQuery, protocol.OpPage:
		default:
			op = "other"
		}
		g.metrics.Requests.WithLabelValues(s.transport(), op, outcome).Inc()
	}
}

// actor is the uid a request acts as: the authenticated one (which the
// request may repeat but not change), or in open mode the one it names.
func (g *Gateway) actor(s session, req *Request, required bool) (string, *Error) {
	if u := s.uid(); u != "" {
		if req.UID != "" && req.UID != u {
			return "", errorf(CodeForbidden, "authenticated as %q, cannot act as %q", u, req.UID)
		}
		return u, nil
	}
	if required && req.UID == "" {
		return "", errorf(CodeBadRequest, "uid required: this broker runs without auth, so requests name their user")
	}
	return req.UID, nil
}

func (g *Gateway) run(ctx context.Context, s session, req *Request) *Error {
	var err error
	switch req.Op {
	case protocol.OpSubscribe:
		err = g.subscribe(ctx, s, req)
	case protocol.OpPublish:
		err = g.publish(ctx, s, req)
	case protocol.OpUnsubscribe:
		err = g.unsubscribe(ctx, s, req)
	case protocol.OpResume:
		err = g.resume(ctx, s, req)
	case protocol.OpQuery:
		err = g.query(ctx, s, req)
	case protocol.OpPage:
		err = g.page(s, req)
	case "":
		return errorf(CodeBadRequest, "missing op")
	default:
		return errorf(CodeUnknownOp, "unknown op %q: use subscribe, publish, unsubscribe, resume, query or page", req.Op)
	}
	if err != nil {
		e := CodeOf(err)
		if e.Code == CodeInternal {
			g.log.Error("storage failure", "op", req.Op, "err", err)
		}
		return e
	}
	return nil
}

func (g *Gateway) subscribe(ctx context.Context, s session, req *Request) error {
	uid, e := g.actor(s, req, true)
	if e != nil {
		return e
	}
	if !s.admit() {
		return g.tooManyOnConn()
	}
	sr := &subscriptions.SubscribeRequest{Uid: uid, Past: req.Past.get(), Future: req.Future.get(), SelfJoin: req.SelfJoin, Stamped: req.stamped}
	if req.Filter != nil {
		sr.Filter = subscriptions.Filter{Keyword: req.Filter.Keyword, Attrs: req.Filter.Attrs}
	}
	at, err := g.locateChecked(req, s.uid(), func(c subscriptions.Cell) error {
		sr.Cell = c
		_, err := g.svc.Limits().NewSubscription(sr, 0)
		return err
	})
	if err != nil {
		return err
	}
	sr.Cell, sr.Cover, sr.Shape = at.cell, at.cover, at.shape
	if e := g.users.reserveSub(s.uid()); e != nil {
		return e
	}
	settled := false
	defer func() {
		if !settled {
			g.users.settleSub(s.uid(), "", 0, false)
		}
	}()
	return g.svc.Subscribe(ctx, sr, s.sink(), func(res *subscriptions.SubscribeResult, sid string) {
		settled = true
		g.users.settleSub(s.uid(), sid, res.Sub.Tmax, res.Stored)
		if res.Stored {
			s.holds(sid)
		}
		past := res.Rendered // from another node, rendered there
		if past == nil {
			past = g.render(res.Past)
		}
		g.replyPaged(s, req, encode(subscribedReply{ID: req.ID, Op: protocol.OpSubscribed, Sid: sid, Cell: res.Sub.Cell.String(), Cover: coverStrings(res.Sub.Cover),
			Ts: FormatTime(res.Sub.Ts), ExpiresAt: FormatTime(res.Sub.Tmax), Live: res.Stored}), protocol.FieldResults, past)
	})
}

func (g *Gateway) publish(ctx context.Context, s session, req *Request) error {
	uid, e := g.actor(s, req, true)
	if e != nil {
		return e
	}
	pr := &subscriptions.PublishRequest{Uid: uid, Expires: req.Expires.get(), Desc: req.Desc, Attrs: req.Attrs, SelfJoin: req.SelfJoin, Stamped: req.stamped}
	at, err := g.locateChecked(req, s.uid(), func(c subscriptions.Cell) error {
		pr.Cell = c
		_, err := g.svc.Limits().NewPublication(pr, 0)
		return err
	})
	if err != nil {
		return err
	}
	pr.Cell, pr.Cover, pr.Shape = at.cell, at.cover, at.shape
	return g.svc.Publish(ctx, pr, func(res *subscriptions.PublishResult) {
		r := publishedReply{ID: req.ID, Op: protocol.OpPublished, Pid: res.Pub.Pid(), Cell: res.Pub.Cell.String(), Cover: coverStrings(res.Pub.Cover),
			Tp: FormatTime(res.Pub.Tp), ExpiresAt: FormatTime(res.Pub.Tmax), Matched: len(res.Matches)}
		if req.SelfJoin {
			g.replyPaged(s, req, encode(r), protocol.FieldRecent, g.render(res.Recent))
			return
		}
		s.reply(encode(r))
	})
}

func (g *Gateway) unsubscribe(ctx context.Context, s session, req *Request) error {
	uid, e := g.actor(s, req, true) // only its user may cancel it: name them
	if e != nil {
		return e
	}
	if req.Sid == "" {
		return errorf(CodeBadRequest, "sid required")
	}
	if err := g.svc.Unsubscribe(ctx, req.Sid, uid, req.stamped); err != nil {
		return err
	}
	g.users.dropSub(s.uid(), req.Sid)
	s.reply(encode(simpleReply{ID: req.ID, Op: protocol.OpUnsubscribed, Sid: req.Sid}))
	return nil
}

func (g *Gateway) resume(ctx context.Context, s session, req *Request) error {
	uid, e := g.actor(s, req, true) // only its user may resume it: name them
	if e != nil {
		return e
	}
	if req.Sid == "" || req.After == nil {
		return errorf(CodeBadRequest, "sid and after required (after: the last seq received, 0 for none)")
	}
	if !s.admit() {
		return g.tooManyOnConn()
	}
	return g.svc.Resume(ctx, req.Sid, *req.After, uid, s.sink(), func(res *subscriptions.ReplayResult) {
		s.holds(req.Sid)
		n := len(res.Pubs)
		// The replayed notifications follow through the sink, as
		// notifications: a queue too full for them makes the route lag
		// and catch up, rather than cutting the client.
		s.reply(encode(simpleReply{ID: req.ID, Op: protocol.OpResumed, Sid: req.Sid, Replayed: &n}))
	})
}

// Close stops taking requests, waits for those being served and for the
// service to dispatch what they released, then lets every WebSocket
// connection drain its queue and close with "going away". The service
// stays open: its owner closes it after the gateway.
func (g *Gateway) Close(ctx context.Context) error {
	g.mu.Lock()
	g.closing = true
	conns := make([]*wsConn, 0, len(g.conns))
	for c := range g.conns {
		conns = append(conns, c)
	}
	g.mu.Unlock()
	done, served := make(chan struct{}), make(chan struct{})
	go func() {
		g.ops.Wait()
		close(served)
		g.work.stop()
		g.svc.Drain() // dispatch what the last operations released
		for _, c := range conns {
			c.close(closeGoingAway, "broker shutting down; reconnect and resume", true)
		}
		g.writers.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		// Out of time: the requests still running are told to stop, and
		// Close returns once they have, so that the caller may close the
		// service under them (what is left to send is lost with the
		// connections, and clients resume).
		g.cancel()
		<-served
		return fmt.Errorf("gateway: %d connections still draining: %w", len(conns), ctx.Err())
	}
}

// requestContext is the context a request runs in: parent's (its
// transport's), cancelled too when Close runs out of time.
func (g *Gateway) requestContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	stop := context.AfterFunc(g.ctx, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}
