package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/catalog"
	"github.com/seed84792017/cellcast/dualdb"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/service"
	"github.com/seed84792017/cellcast/subscriptions"
)

// owner serves one shard on this node: a service over a store of its own,
// fed by requests on the shard's subject and written to the shard's log
// before each answer.
type owner struct {
	n     *Node
	name  string
	lease string // the lease's value: this node and this take
	log   *shardLog
	svc   *service.Service
	store *listdb.Store // svc's, read alone by a priors request
	sub   *nats.Subscription
	ops   chan *op
	quit  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	sinks map[string]*remoteSink // by holding node
	// queries holds a token for each query running (see take).
	queries chan struct{}
	// catalogReady is closed once the catalog has learned the
	// publications the log replayed, or failed to (catalogErr, written
	// before the close); stopCatalog gives up.
	catalogReady chan struct{}
	catalogErr   error
	stopCatalog  func()
	// closing: the shard is being handed over; its routes end here
	// without telling holders, who resume at the next owner.
	closing bool
}

type op struct {
	req   request
	reply string
}

// openOwner rebuilds the shard from its log into a fresh store and starts
// serving it. The store is rebuilt, not reused: a store this node kept
// may hold writes that never reached the log (appended by a fenced-out
// owner, or answered with an error).
func openOwner(ctx context.Context, n *Node, name, lease string) (*owner, error) {
	dir := filepath.Join(n.cfg.Dir, "shards", name)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	lcfg := n.cfg.Store
	lcfg.Durability = listdb.Written // the log is what makes a write durable
	store, err := dualdb.Open(dir, lcfg, n.cfg.LSM)
	if err != nil {
		return nil, fmt.Errorf("cluster: shard %s store: %w", name, err)
	}
	o := &owner{n: n, name: name, lease: lease, store: store, ops: make(chan *op, 4096), quit: make(chan struct{}), done: make(chan struct{}),
		sinks: map[string]*remoteSink{}, queries: make(chan struct{}, maxQueries)}
	fail := func(err error) (*owner, error) {
		store.Close()
		return nil, err
	}
	if o.log, err = openLog(ctx, n.js, name, n.cfg.ID, n.cfg.Replicas, n.cfg.MaxAge); err != nil {
		return fail(err)
	}
	err = o.log.replay(ctx, 0, func(seq uint64, batch []entry) error {
		for _, e := range batch {
			var err error
			switch e.kind {
			case entrySub, entryPub:
				err = store.Restore(ctx, e.body)
			case entryCancel:
				if err = store.Unsubscribe(ctx, string(e.body), nil); errors.Is(err, subscriptions.ErrUnknownSid) {
					err = nil // expired meanwhile
				}
			}
			if err != nil {
				return fmt.Errorf("cluster: shard %s log sequence %d: %w", name, seq, err)
			}
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	// From this append on, a previous owner that still thinks it owns
	// the shard fails to write.
	if _, err := o.log.append(ctx, appendEntry(nil, entryOwner, []byte(n.cfg.ID))); err != nil {
		return fail(err)
	}
	if n.cfg.Replicas > 1 {
		n.spawn(func() {
			sctx, cancel := context.WithTimeout(n.ctx, 5*time.Second)
			defer cancel()
			if err := o.log.stepDown(sctx, n.nc); err != nil && n.ctx.Err() == nil {
				n.log.Warn("cluster: moving a shard log's leader off this node", "shard", name, "err", err)
			}
		})
	}
	// The catalog learns the publications whose home is this shard: one
	// stored in several shards is found once.
	home := func(p *subscriptions.Publication) bool { return n.cfg.Shards.PubHome(p.Cells()) == name }
	var cat *catalog.Catalog
	o.catalogReady = make(chan struct{})
	if n.cfg.Catalog != nil {
		if cat, err = n.cfg.Catalog(filepath.Join(dir, "catalog")); err != nil {
			return fail(fmt.Errorf("cluster: shard %s catalog: %w", name, err))
		}
	}
	o.svc = service.New(service.Config{Store: store, Catalog: cat, Catalogues: home, Encode: n.cfg.Encode, MaxBacklog: n.cfg.MaxBacklog,
		MaxBacklogBytes: n.cfg.MaxBacklogBytes, Log: n.log})
	// The catalog learns what the log replayed while the shard serves
	// (safe beside the publications it learns meanwhile): a take waits
	// for no catalog, and queries wait for it (owner.query).
	rctx, stopCatalog := context.WithCancel(context.Background())
	o.stopCatalog = stopCatalog
	go func() {
		defer close(o.catalogReady)
		if cat == nil {
			return
		}
		if _, err := cat.Reconcile(rctx, homeOnly{store, home}); err != nil && rctx.Err() == nil {
			o.catalogErr = err
			n.log.Error("cluster: a shard's catalog could not learn its publications; its queries fail until the shard moves", "shard", name, "err", err)
		}
	}()
	if o.sub, err = n.nc.Subscribe(shardSubject+name, o.take); err != nil {
		stopCatalog()
		<-o.catalogReady
		o.svc.Close()
		return nil, err
	}
	o.sub.SetPendingLimits(-1, -1)
	go o.loop()
	return o, nil
}

// take queues a request from another node for the loop.
func (o *owner) take(m *nats.Msg) {
	rp, err := decodeRequest(m.Data)
	if err == nil && rp.Holder != "" && !validID(rp.Holder) {
		err = fmt.Errorf("%w: holder %q", errBadRequestWire, rp.Holder)
	}
	if err != nil {
		o.n.log.Error("cluster: a malformed request on a shard subject", "shard", o.name, "err", err)
		return
	}
	o.queue(*rp, m.Reply)
}

// queue queues r for the loop, or answers it at once: a query runs
// beside the loop, and a full queue answers unavailable.
func (o *owner) queue(r request, subject string) {
	if r.Op == opQuery && !o.n.leased(o.name, o.lease) {
		o.answer(r.Holder, subject, &reply{Err: toWire(fmt.Errorf("%w: shard %s moved off this node", service.ErrUnavailable, o.name))})
		return
	}
	if r.Op == opQuery { // reads alone: beside the loop, not in its order
		select {
		case o.queries <- struct{}{}:
			go func() {
				defer func() { <-o.queries }()
				o.answer(r.Holder, subject, o.query(&r))
			}()
		default:
			o.answer(r.Holder, subject, &reply{Err: toWire(fmt.Errorf("%w: shard %s has too many queries running", service.ErrUnavailable, o.name))})
		}
		return
	}
	select {
	case o.ops <- &op{req: r, reply: subject}:
	default:
		o.answer(r.Holder, subject, &reply{Err: toWire(fmt.Errorf("%w: shard %s has too many requests queued", service.ErrUnavailable, o.name))})
	}
}

// takeLocal is take for a request from this node, passed as it is (as
// one node's gateway passes a request to its service), unless the shard
// is being handed over (then the caller goes through NATS, and finds the
// next owner). Holding mu keeps close from missing the request.
func (o *owner) takeLocal(r *request, subject string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closing {
		return false
	}
	o.queue(*r, subject)
	return true
}

// answer sends r to the node that asked, after what this node sent it
// before.
func (o *owner) answer(holder, subject string, r *reply) {
	if subject == "" {
		return
	}
	r.Node = o.lease
	var err error
	if holder == "" || !validID(holder) {
		o.n.counters.replies.Add(1)
		err = o.n.nc.Publish(subject, encodeReply(r, nil))
	} else {
		err = o.n.outbox(holder).reply(subject, r)
	}
	if err != nil {
		o.n.log.Error("cluster: sending a reply", "err", err)
	}
}

// loop runs the shard's operations one at a time, so the log holds them
// in stamp order, and writes each batch of them to the log in one append
// before it answers them: group commit over the replicated log.
func (o *owner) loop() {
	defer close(o.done)
	for {
		var batch []*op
		select {
		case p := <-o.ops:
			batch = append(batch, p)
		case <-o.quit:
			return
		}
	more:
		for len(batch) < 256 {
			select {
			case p := <-o.ops:
				batch = append(batch, p)
			default:
				break more
			}
		}
		if !o.n.leased(o.name, o.lease) {
			// The node's own lease view no longer gives it this take of
			// the shard (lost, released or being rebuilt), whatever the
			// requests assume: the callers find the next owner.
			for _, p := range batch {
				o.answer(p.req.Holder, p.reply, &reply{Err: toWire(fmt.Errorf("%w: shard %s moved off this node", service.ErrUnavailable, o.name))})
			}
			continue
		}
		var log []byte
		finish := make([]func(error), 0, len(batch))
		for _, p := range batch {
			finish = append(finish, o.exec(p, &log))
		}
		var err error
		if len(log) > 0 {
			o.n.counters.appends.Add(1)
			_, err = o.log.append(context.Background(), log)
			if err != nil {
				o.n.log.Error("cluster: the shard's log refused a write; rebuilding the shard", "shard", o.name, "err", err)
				err = fmt.Errorf("%w: %w", service.ErrUnavailable, err)
			}
		}
		corked := o.n.cork() // the batch's answers to one node in one message
		for _, f := range finish {
			f(err)
		}
		uncork(corked)
		if errors.Is(err, errFenced) {
			o.n.spawn(func() { o.n.lose(o.name) }) // which waits for this loop to end
			return
		}
		if err != nil {
			o.n.spawn(func() { o.n.restart(o.name) }) // the store may hold what the log does not
			return
		}
	}
}

// exec runs one operation, appends what it wrote to log, and returns
// what answers it once log has been written (or failed to be).
func (o *owner) exec(p *op, log *[]byte) func(error) {
	ctx := context.Background()
	r := &p.req
	fail := func(err error) func(error) {
		return func(error) { o.answer(p.req.Holder, p.reply, &reply{Err: toWire(err)}) }
	}
	switch r.Op {
	case opSubscribe:
		if r.Sub == nil {
			return fail(fmt.Errorf("%w: subscribe without a request", subscriptions.ErrBadRequest))
		}
		k := o.sink(r.Holder)
		k.hold(r.Route)
		var res *subscriptions.SubscribeResult
		var sid string
		err := o.svc.SubscribeTagged(ctx, r.Sub, k, r.Route, func(sr *subscriptions.SubscribeResult, id string) { res, sid = sr, id })
		if err != nil {
			k.drop(r.Route)
			return fail(err)
		}
		if res.Stored {
			*log = appendEntry(*log, entrySub, listdb.EncodeSubscription(&res.Sub))
		}
		return func(err error) {
			if err != nil {
				k.drop(r.Route)
				o.answer(p.req.Holder, p.reply, &reply{Err: toWire(err)})
				return
			}
			o.answer(p.req.Holder, p.reply, &reply{Sid: sid, SubR: res, Epoch: p.req.Epoch})
			k.release(r.Route)
		}
	case opPublish:
		if r.Pub == nil {
			return fail(fmt.Errorf("%w: publish without a request", subscriptions.ErrBadRequest))
		}
		// Staged: no subscriber hears of it before the log holds it. If
		// the append fails, nobody has (and the shard is rebuilt from
		// the log); the publisher, told unavailable, may retry.
		var res *subscriptions.PublishResult
		commit, err := o.svc.PublishStaged(ctx, r.Pub, func(pr *subscriptions.PublishResult) { res = pr })
		if err != nil {
			return fail(err)
		}
		if res.Stored {
			*log = listdb.AppendSizedPublication(append(*log, entryPub), &res.Pub)
		}
		out := &reply{PubR: &subscriptions.PublishResult{Pub: res.Pub, Stored: res.Stored, Recent: res.Recent}, Match: len(res.Matches)}
		return func(err error) {
			commit(err == nil)
			if err != nil {
				out = &reply{Err: toWire(err)}
			}
			o.answer(p.req.Holder, p.reply, out)
		}
	case opUnsubscribe:
		if err := o.svc.Unsubscribe(ctx, r.Sid, r.Owner, nil); err != nil {
			return fail(err)
		}
		*log = appendEntry(*log, entryCancel, []byte(r.Sid))
		return func(err error) {
			out := &reply{}
			if err != nil {
				out.Err = toWire(err)
			}
			o.answer(p.req.Holder, p.reply, out)
		}
	case opResume:
		k := o.sink(r.Holder)
		k.hold(r.Route)
		var res *subscriptions.ReplayResult
		err := o.svc.ResumeTagged(ctx, r.Sid, r.After, r.Owner, k, r.Route, func(rr *subscriptions.ReplayResult) { res = rr })
		if err != nil {
			k.drop(r.Route)
			return fail(err)
		}
		// A resume writes nothing, but a route made at an owner the log
		// has fenced off would hear nothing more: the log confirms first.
		*log = appendEntry(*log, entryFence, nil)
		return func(err error) {
			if err != nil {
				k.drop(r.Route)
				o.answer(p.req.Holder, p.reply, &reply{Err: toWire(err)})
				return
			}
			o.answer(p.req.Holder, p.reply, &reply{Sid: r.Sid, Rep: &subscriptions.ReplayResult{Sub: res.Sub, Now: res.Now}, N: len(res.Pubs)})
			k.release(r.Route)
		}
	case opDetach:
		o.svc.Detach(r.Sids, o.sink(r.Holder))
		return func(error) { o.answer(p.req.Holder, p.reply, &reply{}) }
	case opPriors:
		if r.Sub == nil {
			return fail(fmt.Errorf("%w: priors without a request", subscriptions.ErrBadRequest))
		}
		subs, err := o.store.SubscriptionsOf(ctx, r.Sub.Uid, cellsOf(r.Sub.Cell, r.Sub.Cover))
		if err != nil {
			return fail(err)
		}
		return func(err error) {
			out := &reply{Prior: subs}
			if err != nil {
				out = &reply{Err: toWire(err)}
			}
			o.answer(p.req.Holder, p.reply, out)
		}
	}
	return fail(fmt.Errorf("%w: unknown cluster operation %q", subscriptions.ErrBadRequest, r.Op))
}

// sink returns the sink of the routes to node holder.
func (o *owner) sink(holder string) *remoteSink {
	o.mu.Lock()
	k := o.sinks[holder]
	o.mu.Unlock()
	if k != nil {
		return k
	}
	nk := newRemoteSink(o, holder) // takes Node.outMu: not under o.mu
	o.mu.Lock()
	defer o.mu.Unlock()
	if k = o.sinks[holder]; k == nil {
		k = nk
		o.sinks[holder] = k
	}
	return k
}

// close stops serving the shard. Its routes end without telling the
// holders, which resume them at the shard's next owner.
func (o *owner) close() {
	o.mu.Lock()
	o.closing = true
	o.mu.Unlock()
	o.sub.Unsubscribe()
	close(o.quit)
	<-o.done
	for {
		select {
		case p := <-o.ops:
			o.answer(p.req.Holder, p.reply, &reply{Err: toWire(fmt.Errorf("%w: shard %s is moving", service.ErrUnavailable, o.name))})
			continue
		default:
		}
		break
	}
	o.stopCatalog()
	<-o.catalogReady
	for range maxQueries { // the queries running end first
		o.queries <- struct{}{}
	}
	if err := o.svc.Close(); err != nil {
		o.n.log.Warn("cluster: closing a shard's store", "shard", o.name, "err", err)
	}
}
