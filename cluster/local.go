package cluster

import (
	"strings"
	"sync"

	"github.com/seed84792017/cellcast/delivery"
)

// What a node's owners send to the node's own holder skips NATS: a third
// of a three-node cluster's traffic would otherwise leave the process
// and come back (request, reply and notifications each a round trip
// through the NATS server). Requests, replies and notifications are
// passed as they are, as a single node's gateway and service pass them:
// a subscribe's reply holds hundreds of past results, which would
// otherwise be encoded and decoded once each without leaving the
// process. A reply carries only what crosses between nodes (answer
// builds it so), so a caller sees the same either way.

// sender is what an owner sends to one holding node, in order: an
// outbox (NATS) for another node, a localBox for its own.
type sender interface {
	notify(route uint64, n *delivery.Notification)
	ended(*lostRoute)
	// reply sends an answer after everything sent before it.
	reply(subject string, r *reply) error
	// cork holds what comes until uncork, which sends it together.
	cork()
	uncork()
	close()
}

// localBox queues, in order, what this node's owners send to its holder,
// and hands it over on a goroutine of its own, as the NATS inbox would.
type localBox struct {
	h       *holder
	replies string // the subject prefix of replies to this node
	kick    chan struct{}

	mu     sync.Mutex
	items  []localItem
	closed bool
	corks  int
}

// localItem is one of a notification, an ended route or a reply.
type localItem struct {
	isNote  bool
	note    notification
	ended   *lostRoute
	subject string
	reply   *reply
}

func newLocalBox(h *holder) *localBox {
	b := &localBox{h: h, replies: nodeSubject + h.n.cfg.ID + ".r.", kick: make(chan struct{}, 1)}
	go b.run()
	return b
}

func (b *localBox) run() {
	var (
		items []localItem
		run   []notification // consecutive notifications, passed on together
	)
	passRun := func() {
		if len(run) > 0 {
			b.h.notify(run)
			clear(run)
			run = run[:0]
		}
	}
	for range b.kick {
		b.mu.Lock()
		items, b.items = b.items, items[:0]
		b.mu.Unlock()
		for i := range items {
			it := &items[i]
			if it.isNote {
				run = append(run, it.note)
				*it = localItem{}
				continue
			}
			passRun()
			if it.ended != nil {
				b.h.lost(it.ended)
			} else {
				b.h.answered(strings.TrimPrefix(it.subject, b.replies), it.reply)
			}
			*it = localItem{}
		}
		passRun()
	}
}

func (b *localBox) push(it localItem) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return // the node is closing, as with a NATS connection closed
	}
	b.items = append(b.items, it)
	if b.corks == 0 {
		b.wake()
	}
	b.mu.Unlock()
}

// wake runs the hand-over; b.mu is held, so that close cannot come
// between.
func (b *localBox) wake() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

func (b *localBox) cork() {
	b.mu.Lock()
	b.corks++
	b.mu.Unlock()
}

func (b *localBox) uncork() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.corks--
	if b.corks == 0 && len(b.items) > 0 && !b.closed {
		b.wake()
	}
}

func (b *localBox) notify(route uint64, n *delivery.Notification) {
	b.push(localItem{isNote: true, note: notification{Route: route, Seq: n.Seq, Replayed: n.Replayed, Pub: n.Pub, Body: n.Body}})
}

func (b *localBox) ended(l *lostRoute) { b.push(localItem{ended: l}) }

func (b *localBox) reply(subject string, r *reply) error {
	b.push(localItem{subject: subject, reply: r})
	return nil
}

func (b *localBox) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	close(b.kick)
}

// sendLocal hands a request for shard, answered on subject, to this
// node's owner of it, if this node owns it and is not handing it over;
// it reports whether it did.
func (n *Node) sendLocal(shard string, r *request, subject string) bool {
	n.mu.Lock()
	o := n.owned[shard]
	n.mu.Unlock()
	return o != nil && o.takeLocal(r, subject)
}
