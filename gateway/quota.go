package gateway

import (
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/protocol"
	"github.com/seed84792017/cellcast/subscriptions"
)

// The limits an overloaded or too_many error names in its limit field
// (protocol.Limits), each with the setting that bounds it.
const (
	LimitConnRate          = protocol.LimitConnRate          // Limits.Rate
	LimitUserRate          = protocol.LimitUserRate          // Limits.UserRate
	LimitConnSubscriptions = protocol.LimitConnSubscriptions // Limits.MaxSubscriptions
	LimitUserSubscriptions = protocol.LimitUserSubscriptions // Limits.UserSubscriptions
	LimitUserConnections   = protocol.LimitUserConnections   // Limits.UserConnections
	LimitUserNewTopics     = protocol.LimitUserNewTopics     // Limits.UserNewTopics
	LimitTopics            = protocol.LimitTopics            // Limits.MaxTopics
)

// users keeps the per-user quotas, which hold across every transport and
// connection. They key on the authenticated uid: without auth a uid is
// whatever a request says, so a per-user quota would bind nobody, and
// only the per-connection limits and the topic cap apply.
type users struct {
	l       Limits
	mu      sync.Mutex
	m       map[string]*user
	sweepAt int // sweep idle users once the map grows to this
}

// user is one uid's use of the broker.
type user struct {
	rate   *rate.Limiter
	topics *rate.Limiter // new topics, per minute
	// subs are the live subscriptions the user made on this broker since
	// it started, sid -> Tmax; pending counts those being made.
	subs    map[string]int64
	pending int
	conns   int
}

const minSweep = 1024

func newUsers(l Limits) *users {
	return &users{l: l, m: map[string]*user{}, sweepAt: minSweep}
}

// get returns uid's record, creating it. The caller holds u.mu.
func (us *users) get(uid string) *user {
	if u := us.m[uid]; u != nil {
		return u
	}
	if len(us.m) >= us.sweepAt {
		us.sweep()
	}
	u := &user{rate: rate.NewLimiter(rate.Limit(us.l.UserRate), us.l.UserBurst),
		topics: rate.NewLimiter(rate.Limit(float64(us.l.UserNewTopics)/60), us.l.UserNewTopics), subs: map[string]int64{}}
	us.m[uid] = u
	return u
}

// sweep forgets users who hold nothing and whose buckets are full again,
// so the map stays as large as the active users.
func (us *users) sweep() {
	now := time.Now()
	for uid, u := range us.m {
		u.prune(now.UnixNano())
		if u.conns == 0 && u.pending == 0 && len(u.subs) == 0 &&
			u.rate.TokensAt(now) >= float64(us.l.UserBurst) && u.topics.TokensAt(now) >= float64(us.l.UserNewTopics) {
			delete(us.m, uid)
		}
	}
	us.sweepAt = max(minSweep, 2*len(us.m))
}

// prune drops the subscriptions that have ended.
func (u *user) prune(now int64) {
	for sid, tmax := range u.subs {
		if tmax <= now {
			delete(u.subs, sid)
		}
	}
}

// allow takes one request from uid's rate.
func (us *users) allow(uid string) *Error {
	if uid == "" {
		return nil
	}
	us.mu.Lock()
	u := us.get(uid)
	r := u.rate.Reserve()
	us.mu.Unlock()
	d := r.Delay()
	if d == 0 {
		return nil
	}
	r.Cancel()
	e := errorf(CodeOverloaded, "user %q over %g requests per second across all connections; slow down", uid, us.l.UserRate)
	e.Limit, e.RetryAfter = LimitUserRate, max(d, time.Duration(float64(time.Second)/us.l.UserRate))
	return e
}

// connect counts a connection of uid, unless it has too many.
func (us *users) connect(uid string) *Error {
	if uid == "" {
		return nil
	}
	us.mu.Lock()
	defer us.mu.Unlock()
	u := us.get(uid)
	if u.conns >= us.l.UserConnections {
		e := errorf(CodeTooMany, "user %q has %d connections open (limit %d)", uid, u.conns, us.l.UserConnections)
		e.Limit = LimitUserConnections
		return e
	}
	u.conns++
	return nil
}

func (us *users) disconnect(uid string) {
	if uid == "" {
		return
	}
	us.mu.Lock()
	us.get(uid).conns--
	us.mu.Unlock()
}

// reserveSub holds a slot for a subscription uid is making; settleSub
// fills or frees it.
func (us *users) reserveSub(uid string) *Error {
	if uid == "" {
		return nil
	}
	us.mu.Lock()
	defer us.mu.Unlock()
	u := us.get(uid)
	if len(u.subs)+u.pending >= us.l.UserSubscriptions {
		u.prune(time.Now().UnixNano())
	}
	if n := len(u.subs) + u.pending; n >= us.l.UserSubscriptions {
		e := errorf(CodeTooMany, "user %q has %d live subscriptions (limit %d); unsubscribe or let some end", uid, n, us.l.UserSubscriptions)
		e.Limit = LimitUserSubscriptions
		return e
	}
	u.pending++
	return nil
}

// settleSub ends a reservation: the subscription sid, live until tmax,
// when stored.
func (us *users) settleSub(uid, sid string, tmax int64, stored bool) {
	if uid == "" {
		return
	}
	us.mu.Lock()
	u := us.get(uid)
	u.pending--
	if stored {
		u.subs[sid] = tmax
	}
	us.mu.Unlock()
}

// dropSub frees the slot of a cancelled subscription.
func (us *users) dropSub(uid, sid string) {
	if uid == "" {
		return
	}
	us.mu.Lock()
	delete(us.get(uid).subs, sid)
	us.mu.Unlock()
}

// newTopics admits n new topics in the registry, which holds have, for uid
// (empty in open mode: only the global cap applies).
func (us *users) newTopics(uid string, n, have int) *Error {
	if have+n > us.l.MaxTopics {
		e := errorf(CodeTooMany, "the topic registry is full (%d topics, limit %d): use an existing topic", have, us.l.MaxTopics)
		e.Limit = LimitTopics
		return e
	}
	if uid == "" {
		return nil
	}
	us.mu.Lock()
	r := us.get(uid).topics.ReserveN(time.Now(), n)
	us.mu.Unlock()
	if !r.OK() || r.Delay() > 0 {
		e := errorf(CodeOverloaded, "user %q may create %d new topics per minute", uid, us.l.UserNewTopics)
		e.Limit = LimitUserNewTopics
		if r.OK() {
			e.RetryAfter = r.Delay()
			r.Cancel()
		} else {
			e.Code = CodeTooMany // more at once than a minute allows
		}
		return e
	}
	return nil
}

// tooManyOnConn refuses a subscription over the per-connection limit.
func (g *Gateway) tooManyOnConn() *Error {
	e := errorf(CodeTooMany, "too many live subscriptions on this connection (limit %d)", g.limits.MaxSubscriptions)
	e.Limit = LimitConnSubscriptions
	return e
}

// locateChecked locates req's cell (and cover, for a circle's). A topic is registered (stored, with
// an fsync) only once the rest of the request has passed check, on a
// stand-in cell (a topic id passes the cell check whatever its depth,
// which checkPath bounds), and the topic quotas admit it: a refused
// request leaves no topic behind. uid is the authenticated user, "" in
// open mode.
func (g *Gateway) locateChecked(req *Request, uid string, check func(subscriptions.Cell) error) (place, error) {
	if req.Topic == nil || g.loc.topics == nil {
		return g.loc.locate(req) // nothing to register: the store checks the rest
	}
	if e := checkForms(req); e != nil {
		return place{}, e
	}
	if err := check(subscriptions.Cell{NS: subscriptions.NSTopic, ID: dewey.ID{1}}); err != nil {
		return place{}, err
	}
	if n := g.loc.topics.Missing(*req.Topic); n > 0 {
		if e := g.users.newTopics(uid, n, g.loc.topics.Len()); e != nil {
			return place{}, e
		}
	}
	return g.loc.locate(req)
}
