package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/bench/workload"
	"github.com/seed84792017/cellcast/client"
	"github.com/seed84792017/cellcast/dewey"
)

// Config shapes a run.
type Config struct {
	// WSURLs are the brokers' WebSocket endpoints, ws://host:port/ws: one
	// broker, or the nodes of a cluster. Connection i dials the i-th (mod
	// their number) and falls back on the others when it is lost.
	WSURLs     []string
	NATSURL    string // publish over NATS here; empty: over WebSocket
	MetricsURL string // the broker's /metrics, scraped for RSS and lsm stats; empty: none
	Ops        []workload.Op
	// Closed runs flat out, Window requests in flight per connection;
	// otherwise each operation is sent at its offset (times Slowdown).
	Closed   bool
	Slowdown float64 // default 1
	Conns    int     // subscriber connections (default 16)
	PubConns int     // publisher connections (default 4)
	Window   int     // requests in flight per connection (default 64)
	// Ahead bounds, in a closed loop, the operations handed to connections
	// and not yet answered, across all of them (0: only each connection's
	// queue bounds them). Without it, publishers run ahead of slower
	// subscribers through the workload, and their publications come back
	// as past results instead of notifications; with it, the connections
	// keep to the workload's order within Ahead operations.
	Ahead int
	// DropEvery cuts a random subscriber connection this often and resumes
	// its subscriptions on a new one (0: never).
	DropEvery time.Duration
	Seed      int64
	// Progress gets a line every ProgressEvery (default 1 s); nil: none.
	Progress      io.Writer
	ProgressEvery time.Duration
	// Settle is how long to wait, after the last reply, for notifications
	// still on their way: until this passes without one (default 1 s).
	Settle time.Duration
	// SpoolDir holds the files of what arrived, removed at the end
	// (default: os.TempDir()).
	SpoolDir string
	// Shard names the shard a cell's operations go to (a cluster's: its
	// layout's cluster.Shards.Home), for the report's longest gaps without
	// a successful reply and its deliveries per shard; nil: one group,
	// and no deliveries per shard.
	Shard func(cell dewey.ID) string
	// Route, when set, names for a cell the index in WSURLs of the broker
	// to send its operations to, as a client that knows a cluster's
	// shard owners would: subscribes go to a connection on that broker
	// (chosen by user), publishes to a publisher connection on it. Over
	// WebSocket only, with at least one connection of each kind per URL.
	Route func(cell dewey.ID) int
	// Separate asks the broker for one frame per notification instead of
	// grouped frames (client.Options.SeparateNotifications).
	Separate bool
}

func (c *Config) withDefaults() error {
	if len(c.WSURLs) == 0 || slices.Contains(c.WSURLs, "") {
		return errors.New("loadgen: no WebSocket URL")
	}
	if c.Slowdown == 0 {
		c.Slowdown = 1
	}
	if c.Conns == 0 {
		c.Conns = 16
	}
	if c.PubConns == 0 {
		c.PubConns = 4
	}
	if c.Window == 0 {
		c.Window = 64
	}
	if c.ProgressEvery == 0 {
		c.ProgressEvery = time.Second
	}
	if c.Settle == 0 {
		c.Settle = time.Second
	}
	if c.Route != nil && (c.NATSURL != "" || c.Conns < len(c.WSURLs) || c.PubConns < len(c.WSURLs)) {
		return errors.New("loadgen: Route needs WebSocket publishers and a subscriber and a publisher connection per broker")
	}
	if c.Slowdown < 0 || c.Conns < 0 || c.PubConns < 0 || c.Window < 0 || c.Ahead < 0 || c.DropEvery < 0 {
		return errors.New("loadgen: negative slowdown, connection count, window or drop interval")
	}
	return nil
}

// natsReply is what the broker answers a publish over NATS.
type natsReply struct {
	Op      string `json:"op"`
	Pid     string `json:"pid"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// task is an operation on its way, or a cut for a subscriber connection.
type task struct {
	op    *workload.Op
	index int   // into the run's records
	due   int64 // scheduled time, unix ns; 0: when sent (closed loop)
	cut   bool
}

// sent stamps a closed-loop task as it leaves.
func (t *task) sent() {
	if t.due == 0 {
		t.due = time.Now().UnixNano()
	}
}

// subRec and pubRec are what the replies told.
type subRec struct {
	op   *workload.Op
	sid  string
	ts   int64
	tmax int64
	ok   bool
}

type pubRec struct {
	op  *workload.Op
	tp  int64
	due int64
	ok  bool
	// unknown: the request failed with no known outcome (the connection
	// or the shard was lost, or the store failed): it may have been
	// stored, and its notifications are not unexpected.
	unknown bool
}

type run struct {
	cfg      Config
	start    time.Time
	subs     []subRec // by task index, written once by the reply's callback
	pubs     []pubRec
	mu       sync.Mutex     // guards errs and cuts
	errs     map[string]int // by kind
	examples []string
	cuts     map[string]int // connections the broker closed, by reason

	sent, answered, notes atomic.Int64
	drops, resumes        atomic.Int64
	lateResumes           atomic.Int64
	replyLat              *histo
	pubDone               *sync.WaitGroup // publishers done with their tasks
	ahead                 chan struct{}   // a slot per operation handed out and not answered (Config.Ahead)
	past                  *spool          // past results, at = 0
	mark                  string          // " #<nonce>.": names this run in each publication's description
	gaps                  gaps
	shards                shards // by operation, with Config.Shard
}

// Run runs cfg's operations against the broker and reports.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, errs: map[string]int{}, cuts: map[string]int{}, replyLat: newHisto(),
		mark: " #" + strconv.FormatInt(time.Now().UnixNano(), 36) + "."}
	r.subs = make([]subRec, len(cfg.Ops))
	if cfg.Closed && cfg.Ahead > 0 {
		r.ahead = make(chan struct{}, cfg.Ahead)
	}
	r.pubs = make([]pubRec, len(cfg.Ops))
	r.shards = newShards(cfg.Ops, cfg.Shard)
	var err error
	if r.past, err = newSpool(cfg.SpoolDir); err != nil {
		return nil, err
	}
	defer r.past.remove()
	conns := make([]*wsConn, cfg.Conns)
	defer closeAll(conns)
	for i := range conns {
		c, err := dialWS(r, i)
		if err != nil {
			return nil, err
		}
		conns[i] = c
	}
	pubs, closePubs, err := r.publishers()
	if err != nil {
		return nil, err
	}
	defer closePubs()

	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go c.serve(ctx, wg.Done)
	}
	stopProgress := r.progress()
	r.start = time.Now()
	r.gaps.start(r.start)
	dropTick := func() <-chan time.Time { return nil }
	if cfg.DropEvery > 0 {
		t := time.NewTicker(cfg.DropEvery)
		defer t.Stop()
		dropTick = func() <-chan time.Time { return t.C }
	}
	rng := rand.New(rand.NewSource(cfg.Seed))
	for i := range cfg.Ops {
		op := &cfg.Ops[i]
		var due int64 // closed loop: stamped when sent
		if !cfg.Closed {
			at := r.start.Add(time.Duration(float64(op.At) * cfg.Slowdown))
			for wait := time.Until(at); wait > 0; wait = time.Until(at) {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-dropTick():
					conns[rng.Intn(len(conns))].tasks <- task{cut: true}
				case <-time.After(wait):
				}
			}
			due = at.UnixNano()
		} else {
			select {
			case <-dropTick():
				conns[rng.Intn(len(conns))].tasks <- task{cut: true}
			default:
			}
		}
		t := task{op: op, index: i, due: due}
		if r.ahead != nil {
			select {
			case r.ahead <- struct{}{}:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		switch {
		case cfg.Route != nil && op.Kind == workload.Subscribe:
			conns[routed(cfg.Route(op.Cell), shard(op.Uid, len(conns)), len(cfg.WSURLs), len(conns))].tasks <- t
		case op.Kind == workload.Subscribe:
			conns[shard(op.Uid, len(conns))].tasks <- t
		case cfg.Route != nil:
			pubs[cfg.Route(op.Cell)%len(pubs)] <- t
		default:
			pubs[0] <- t
		}
	}
	for _, ch := range pubs {
		close(ch)
	}
	for _, c := range conns {
		close(c.tasks)
	}
	wg.Wait()
	r.waitPublishers()
	// Notifications still on their way: until Settle passes without one
	// and with every connection up.
	up := func() bool {
		for _, c := range conns {
			if !c.c.Connected() {
				return false
			}
		}
		return true
	}
	for last := r.notes.Load(); ; {
		time.Sleep(r.cfg.Settle)
		n := r.notes.Load()
		if n == last && up() {
			break
		}
		last = n
	}
	elapsed := time.Since(r.start)
	stopProgress()
	spools := []*spool{r.past}
	for _, c := range conns {
		c.c.Close() // waits for its reader: the spool is whole
		spools = append(spools, c.got)
		st := c.c.Stats()
		r.resumes.Add(st.Resumes)
		r.lateResumes.Add(st.Lost)
	}
	return r.report(elapsed, spools)
}

// routed is the index of a connection on broker b (connection i dials
// broker i mod brokers) among n connections, the k-th of them mod their
// number.
func routed(b, k, brokers, n int) int {
	on := (n - b + brokers - 1) / brokers // connections b, b+brokers, ...
	return b + brokers*(k%on)
}

func shard(uid string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(uid))
	return int(h.Sum32() % uint32(n))
}

func (r *run) brokerCut(why string) {
	r.mu.Lock()
	r.cuts[why]++
	r.mu.Unlock()
}

// fail counts an error of a kind, keeping a few examples of each.
func (r *run) fail(kind, example string) {
	r.mu.Lock()
	if r.errs[kind]++; r.errs[kind] <= 3 {
		r.examples = append(r.examples, kind+": "+example)
	}
	r.mu.Unlock()
}

// subscribed files a SUBSCRIBE's reply.
func (r *run) subscribed(t task, sub *client.Subscription, err error) {
	r.answered.Add(1)
	r.replyLat.record(time.Now().UnixNano() - t.due)
	if err != nil {
		code, msg := errKind(err)
		r.fail("subscribe: "+code, msg)
		return
	}
	r.gaps.ok(r.shards.name(t.index), time.Now())
	s := &r.subs[t.index]
	s.op, s.sid, s.ts, s.tmax, s.ok = t.op, sub.Sid, sub.Ts.UnixNano(), sub.ExpiresAt.UnixNano(), true
	for _, p := range sub.Past {
		r.past.add(rec{sub: int64(t.index), pub: r.pubOf(p.Desc)})
	}
	r.shards.addPast(t.index, len(sub.Past))
	sub.Past = nil // the client keeps the subscription, for resumes, to the end of the run
}

// published files a PUBLISH's reply.
func (r *run) published(t task, p *client.Published, err error) {
	if err != nil {
		code, msg := errKind(err)
		r.answered.Add(1)
		r.replyLat.record(time.Now().UnixNano() - t.due)
		r.fail("publish: "+code, msg)
		r.pubs[t.index].unknown = unknownOutcome(code)
		return
	}
	r.publishedAt(t, p.Tp.UnixNano())
}

func (r *run) publishedAt(t task, tp int64) {
	r.answered.Add(1)
	now := time.Now()
	r.replyLat.record(now.UnixNano() - t.due)
	r.gaps.ok(r.shards.name(t.index), now)
	r.pubs[t.index] = pubRec{op: t.op, tp: tp, due: t.due, ok: true}
}

// unknownOutcome reports whether a request that failed with this code
// may all the same have been stored.
func unknownOutcome(code string) bool {
	return code == "transport" || code == "unavailable" || code == "internal"
}

// desc is the description a publication goes out with: the workload's,
// then the run's nonce and the operation's index, which its notifications
// bring back (pubOf).
func (r *run) desc(t task) string {
	return t.op.Desc + r.mark + strconv.Itoa(t.index)
}

// pubOf is the index of the publication that desc names, or -1.
func (r *run) pubOf(desc string) int64 {
	// The mark ends in '.', which the digits after it never hold.
	i := strings.LastIndexByte(desc, '.') + 1
	if i == 0 || !strings.HasSuffix(desc[:i], r.mark) {
		return -1
	}
	n, err := strconv.Atoi(desc[i:])
	if err != nil || n < 0 || n >= len(r.pubs) {
		return -1
	}
	return int64(n)
}

// natsRequest renders a publish as the broker's JSON request.
func (r *run) natsRequest(t task) []byte {
	op := t.op
	m := map[string]any{"uid": op.Uid, "cell": op.Cell.String(), "expires": op.Expires.String(), "desc": r.desc(t)}
	if op.SelfJoin {
		m["self_join"] = true
	}
	b, _ := json.Marshal(m)
	return b
}

// publishers starts the goroutines that publish, over NATS or WebSocket,
// and returns the channels that feed them: one, or with Config.Route one
// per broker.
func (r *run) publishers() ([]chan task, func(), error) {
	ch := make(chan task, 1<<16)
	chans := []chan task{ch}
	r.pubDone = &sync.WaitGroup{}
	if r.cfg.NATSURL == "" {
		if r.cfg.Route != nil {
			for range len(r.cfg.WSURLs) - 1 {
				chans = append(chans, make(chan task, 1<<16))
			}
		}
		conns := make([]*wsConn, r.cfg.PubConns)
		for i := range conns {
			c, err := dialWS(r, i)
			if err != nil {
				closeAll(conns)
				return nil, nil, err
			}
			conns[i] = c
			c.tasks = chans[i%len(chans)] // they share their broker's publications
			r.pubDone.Add(1)
			go c.serve(context.Background(), r.pubDone.Done)
		}
		return chans, func() { closeAll(conns) }, nil
	}
	var ncs []*nats.Conn
	closeNATS := func() {
		for _, nc := range ncs {
			nc.Close()
		}
	}
	for range r.cfg.PubConns {
		nc, err := nats.Connect(r.cfg.NATSURL, nats.Name("cellcast-loadgen"))
		if err != nil {
			closeNATS()
			return nil, nil, fmt.Errorf("loadgen: NATS: %w", err)
		}
		ncs = append(ncs, nc)
		for range r.cfg.Window {
			r.pubDone.Add(1)
			go func() {
				defer r.pubDone.Done()
				for t := range ch {
					t.sent()
					r.sent.Add(1)
					m, err := nc.Request("cellcast.publish", r.natsRequest(t), 10*time.Second)
					rep := &natsReply{}
					if err == nil {
						err = json.Unmarshal(m.Data, rep)
					}
					switch {
					case err != nil:
						r.published(t, nil, err)
					case rep.Op != "published":
						r.published(t, nil, &client.Error{Code: rep.Code, Message: rep.Message})
					default:
						r.publishedAt(t, stamp(rep.Pid))
					}
					r.finished()
				}
			}()
		}
	}
	return chans, closeNATS, nil
}

func (r *run) waitPublishers() { r.pubDone.Wait() }

// finished frees an answered (or skipped) operation's slot under
// Config.Ahead.
func (r *run) finished() {
	if r.ahead != nil {
		<-r.ahead
	}
}

// progress prints a line every ProgressEvery until stopped.
func (r *run) progress() func() {
	if r.cfg.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(r.cfg.ProgressEvery)
		defer t.Stop()
		var lastNotes int64
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			n := r.notes.Load()
			line := fmt.Sprintf("%6.1fs  ops %d/%d  answered %d  notifications %d (%.0f/s)  drops %d  errors %d",
				time.Since(r.start).Seconds(), r.sent.Load(), len(r.cfg.Ops), r.answered.Load(), n,
				float64(n-lastNotes)/r.cfg.ProgressEvery.Seconds(), r.drops.Load(), r.errorCount())
			if m, err := scrape(r.cfg.MetricsURL); err == nil && m.RSSMiB > 0 {
				line += fmt.Sprintf("  broker RSS %.0f MiB", m.RSSMiB)
			}
			fmt.Fprintln(r.cfg.Progress, line)
			lastNotes = n
		}
	}()
	return func() { close(done); <-stopped }
}

func (r *run) errorCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, k := range r.errs {
		n += k
	}
	return n
}

// stamp is the stamp of an id (sid or pid): base-36 digits before the
// first '-' (subscriptions.FormatID); 0 if there are none.
func stamp(id string) int64 {
	if i := strings.IndexByte(id, '-'); i >= 0 {
		id = id[:i]
	}
	t, _ := strconv.ParseInt(id, 36, 64)
	return t
}
