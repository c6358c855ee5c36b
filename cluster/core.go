package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/seed84792017/cellcast/delivery"
	"github.com/seed84792017/cellcast/service"
	"github.com/seed84792017/cellcast/subscriptions"
)

// The operations a gateway runs on a node (gateway.Core): each goes to
// the owner of the shard it concerns, wherever that is.

// Limits are the bounds every shard's store checks requests against.
func (n *Node) Limits() subscriptions.Limits { return n.limits }

// Subscribe stores the subscription in its home shard and routes its
// notifications to sink.
func (n *Node) Subscribe(ctx context.Context, req *subscriptions.SubscribeRequest, sink delivery.Sink, answer func(*subscriptions.SubscribeResult, string)) error {
	cells := cellsOf(req.Cell, req.Cover)
	shard := n.cfg.Shards.SubHome(cells, req.Uid, req.SelfJoin)
	sub := *req
	if req.SelfJoin {
		var err error
		if sub.Prior, err = n.priorsOf(ctx, req, cells, shard); err != nil {
			return err
		}
	}
	h := n.h
	id := h.next.Add(1)
	// The route opens on the inbox goroutine, before any later
	// notification is read, but holds them until the client has its
	// answer: answering on the caller's goroutine lets the gateway wait
	// for the connection's earlier replies without stopping the inbox.
	// The request's place is where it leaves for the owner, not where a
	// store of this node stamps it (a local owner gets it as it is).
	sub.Stamped = nil
	rep, err := h.call(ctx, shard, &request{Op: opSubscribe, Holder: n.cfg.ID, Sub: &sub, Route: id, Epoch: h.kept.current(), stamped: req.Stamped}, func(r *reply) {
		if r.Err != nil || r.SubR == nil || !r.SubR.Stored || sink == nil {
			return
		}
		h.put(&route{id: id, sid: r.Sid, uid: req.Uid, shard: shard, node: r.Node, sink: sink, state: opening}) // h.mu is held
	})
	if err != nil {
		h.abandon(id)
		return err
	}
	if rep.SubR == nil {
		return fmt.Errorf("%w: a subscribe's reply without its result", service.ErrUnavailable)
	}
	answer(rep.SubR, rep.Sid)
	h.open(id)
	return nil
}

// priorsOf finds the user's subscriptions on cells overlapping a
// self-join's in the shards other than its home that can hold them (a
// publication on its cells reaches every such shard), so that the
// self-join leaves out what they received, as on one node.
func (n *Node) priorsOf(ctx context.Context, req *subscriptions.SubscribeRequest, cells []subscriptions.Cell, home string) ([]subscriptions.Subscription, error) {
	shards := n.cfg.Shards.PriorShards(cells, home)
	ask := &request{Op: opPriors, Holder: n.cfg.ID, Sub: &subscriptions.SubscribeRequest{Uid: req.Uid, Cell: req.Cell, Cover: req.Cover}}
	replies := make([]*reply, len(shards))
	errs := make([]error, len(shards))
	var wg sync.WaitGroup
	for i, s := range shards {
		wg.Go(func() {
			r := *ask
			replies[i], errs[i] = n.h.call(ctx, s, &r, nil)
		})
	}
	wg.Wait()
	var prior []subscriptions.Subscription
	for i, r := range replies {
		if errs[i] != nil {
			return nil, fmt.Errorf("the user's subscriptions in shard %s: %w", shards[i], errs[i])
		}
		prior = append(prior, r.Prior...)
	}
	return prior, nil
}

// Publish stores the publication in every shard its cell reaches and
// answers with its home shard's result. A publication some shard failed
// to store is reported as failed: the publisher retries, and
// subscribers of the shards that did store it may see it twice.
func (n *Node) Publish(ctx context.Context, req *subscriptions.PublishRequest, answer func(*subscriptions.PublishResult)) error {
	targets := n.cfg.Shards.Targets(cellsOf(req.Cell, req.Cover))
	replies := make([]*reply, len(targets))
	errs := make([]error, len(targets))
	p := *req // its place is where it leaves, as for Subscribe
	p.Stamped = nil
	pub := &request{Op: opPublish, Holder: n.cfg.ID, Pub: &p, stamped: req.Stamped}
	if len(targets) == 1 {
		replies[0], errs[0] = n.h.call(ctx, targets[0], pub, nil)
	} else {
		n.publishAll(ctx, targets, pub, replies, errs)
	}
	matched := 0
	for i, err := range errs {
		if err != nil {
			if i > 0 {
				return fmt.Errorf("%w: shard %s: %w", service.ErrUnavailable, targets[i], err)
			}
			return err
		}
		matched += replies[i].Match
	}
	res := replies[0].PubR
	res.Matches = make([]subscriptions.Matched, matched) // the gateway reports how many
	answer(res)
	return nil
}

// publishAll sends pub to every target shard at once. The publication has
// taken its place once every shard has it.
func (n *Node) publishAll(ctx context.Context, targets []string, pub *request, replies []*reply, errs []error) {
	var sent sync.WaitGroup
	sent.Add(len(targets))
	go func() {
		sent.Wait()
		pub.stamped.Mark()
	}()
	var wg sync.WaitGroup
	for i, s := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var once sync.Once
			mark := func() { once.Do(sent.Done) }
			defer mark() // a call that failed to send
			r := *pub
			r.stamped = mark
			replies[i], errs[i] = n.h.call(ctx, s, &r, nil)
		}()
	}
	wg.Wait()
}

// Unsubscribe cancels owner's subscription sid at its shard; stamped
// hears when the request has left for it.
func (n *Node) Unsubscribe(ctx context.Context, sid, owner string, stamped subscriptions.Stamped) error {
	shards, err := n.shardsOf(sid, owner)
	if err != nil {
		return err
	}
	for _, shard := range shards {
		_, err = n.h.call(ctx, shard, &request{Op: opUnsubscribe, Holder: n.cfg.ID, Sid: sid, Owner: owner, stamped: stamped}, nil)
		if !errors.Is(err, subscriptions.ErrUnknownSid) {
			break
		}
	}
	return err
}

// cellsOf lists a request's cells: its cover, sorted as the store sorts
// it (the first names the record), or its one cell.
func cellsOf(cell subscriptions.Cell, cover []subscriptions.Cell) []subscriptions.Cell {
	if len(cover) == 0 {
		return []subscriptions.Cell{cell}
	}
	cs := slices.Clone(cover)
	slices.SortFunc(cs, subscriptions.Cell.Compare)
	return cs
}

// shardsOf lists the shards the subscription sid of uid may live in,
// likeliest first (Shards.Candidates): a sid names only its first cell.
func (n *Node) shardsOf(sid, uid string) ([]string, error) {
	_, c, err := subscriptions.ParseID(sid)
	if err != nil {
		return nil, err
	}
	return n.cfg.Shards.Candidates(c, uid), nil
}

// Resume routes sid to sink from any node: its shard's owner replays what
// it missed after the sequence number after.
func (n *Node) Resume(ctx context.Context, sid string, after int64, owner string, sink delivery.Sink, answer func(*subscriptions.ReplayResult)) error {
	if after < 0 {
		return delivery.ErrBadSeq
	}
	shards, err := n.shardsOf(sid, owner)
	if err != nil {
		return err
	}
	for _, shard := range shards {
		if err = n.resumeAt(ctx, shard, sid, after, owner, sink, answer); !errors.Is(err, subscriptions.ErrUnknownSid) {
			break
		}
	}
	return err
}

// resumeAt is Resume at one shard.
func (n *Node) resumeAt(ctx context.Context, shard, sid string, after int64, owner string, sink delivery.Sink, answer func(*subscriptions.ReplayResult)) error {
	h := n.h
	var moved *route
	id := h.next.Add(1)
	rep, err := h.call(ctx, shard, &request{Op: opResume, Holder: n.cfg.ID, Sid: sid, After: after, Owner: owner, Route: id}, func(r *reply) {
		if r.Err != nil || r.Rep == nil { // h.mu is held
			return
		}
		if old := h.routes[sid]; old != nil && old.sink != sink {
			moved = old
		}
		h.put(&route{id: id, sid: sid, uid: r.Rep.Sub.Uid, shard: shard, node: r.Node, sink: sink, last: after, state: opening})
	})
	h.mu.Lock() // moved was set, if at all, under it, and the call is over
	gone := moved
	h.mu.Unlock()
	if gone != nil {
		gone.sink.Ended(delivery.End{Sid: sid, Uid: gone.uid, Why: delivery.EndMoved, Last: gone.last})
	}
	if err != nil {
		h.abandon(id)
		return err
	}
	if rep.Rep == nil {
		return fmt.Errorf("%w: a resume's reply without its result", service.ErrUnavailable)
	}
	res := *rep.Rep
	res.Pubs = make([]subscriptions.Publication, rep.N) // they follow as notifications
	answer(&res)
	h.open(id)
	return nil
}

// CatchUp resumes the subscriptions of sink that lag: their owners
// replay what sink refused.
func (n *Node) CatchUp(ctx context.Context, sink delivery.Sink) (int, error) {
	h := n.h
	var again []*route
	h.mu.Lock()
	for _, r := range h.routes {
		if r.sink == sink && r.state == lagging {
			r.state = resuming
			again = append(again, r)
		}
	}
	h.mu.Unlock()
	for _, r := range again {
		h.resume(r)
	}
	return len(again), nil
}

// Detach stops routing sids to sink, which is going away: one message to
// each shard's owner, not one per subscription (a connection closing may
// hold thousands).
func (n *Node) Detach(sids []string, sink delivery.Sink) {
	h := n.h
	byShard := map[string][]string{}
	h.mu.Lock()
	for _, sid := range sids {
		r := h.routes[sid]
		if r == nil || r.sink != sink {
			continue
		}
		h.drop(sid)
		byShard[r.shard] = append(byShard[r.shard], sid)
	}
	h.mu.Unlock()
	for shard, sids := range byShard {
		n.h.send(shard, &request{Op: opDetach, Holder: n.cfg.ID, Sids: sids}, "")
	}
}

// Drain waits until the shards this node owns have dispatched what they
// released.
func (n *Node) Drain() {
	n.mu.Lock()
	var svcs []*service.Service
	for _, o := range n.owned {
		svcs = append(svcs, o.svc)
	}
	n.mu.Unlock()
	for _, s := range svcs {
		s.Drain()
	}
}
