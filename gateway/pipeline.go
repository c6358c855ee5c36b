package gateway

import (
	"context"
	"sync"

	"github.com/seed84792017/cellcast/delivery"
	"github.com/seed84792017/cellcast/subscriptions"
)

// pipelineDepth bounds the requests of one WebSocket connection in flight
// at once; past it the reader stops reading, and TCP pushes back.
const pipelineDepth = 32

// pipeline runs a WebSocket connection's requests several at a time and
// still in order. Request N+1 starts once N has taken its stamp (the
// store marks the request's subscriptions.Stamped; a cluster node once the
// request has left for its shard's owner, which runs them in the order
// they come) or has finished, so the stamps keep the order the client
// sent; each reply waits until the one before has left, so the replies
// keep it too. What overlaps is the wait for the disk or the replicated
// log: a connection that sends 32 requests at once shares one fsync, or
// one log append, among them instead of paying 32.
//
// Only the reader goroutine calls run.
type pipeline struct {
	slots chan struct{}  // one per request in flight
	last  chan struct{}  // closed once the latest request has answered
	wg    sync.WaitGroup // requests in flight
}

func newPipeline() *pipeline {
	last := make(chan struct{})
	close(last)
	return &pipeline{slots: make(chan struct{}, pipelineDepth), last: last}
}

// run serves one request on a worker goroutine (workers.go): do with a session whose
// replies keep their place. It returns once the request has its stamp or
// is done.
func (p *pipeline) run(c *wsConn, do func(ctx context.Context, s session, stamped subscriptions.Stamped)) {
	p.slots <- struct{}{}
	s := &orderedReplies{c: c, prev: p.last}
	done := make(chan struct{})
	p.last = done
	stamped := make(chan struct{})
	var once sync.Once
	mark := func() { once.Do(func() { close(stamped) }) }
	p.wg.Add(1)
	c.g.work.run(func() {
		defer p.wg.Done()
		defer func() { <-p.slots }()
		defer mark()
		do(c.ctx, s, mark)
		s.turn() // a request that did not reply still keeps its place
		close(done)
	})
	<-stamped
}

// wait returns once every request has answered.
func (p *pipeline) wait() { p.wg.Wait() }

// orderedReplies is a connection as one pipelined request sees it: its
// replies wait for the previous request's. It holds the connection rather
// than embedding it, so each way to reply (replier) is one of its own.
// Notifications do not wait: they go to the connection itself (sink), and
// a subscription's route opens only after its reply has been queued.
type orderedReplies struct {
	c    *wsConn
	prev <-chan struct{}
}

func (o *orderedReplies) turn() { <-o.prev }

func (o *orderedReplies) transport() string   { return "ws" }
func (o *orderedReplies) uid() string         { return o.c.user }
func (o *orderedReplies) sink() delivery.Sink { return o.c }
func (o *orderedReplies) admit() bool         { return o.c.admit() }
func (o *orderedReplies) holds(sid string)    { o.c.holds(sid) }
func (o *orderedReplies) failed(*Error)       {}
func (o *orderedReplies) replyBudget(b int) int {
	return b
}

func (o *orderedReplies) reply(b []byte) {
	o.turn()
	o.c.reply(b)
}

func (o *orderedReplies) replyAll(frames [][]byte) bool {
	o.turn()
	return o.c.replyAll(frames)
}

func (o *orderedReplies) replyList(head []byte, key string, items [][]byte) {
	o.turn()
	o.c.replyList(head, key, items)
}
