package cluster

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/delivery"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/subscriptions"
)

// outbox is, on a shard owner, everything bound for one holding node:
// notifications, ended routes and replies go out in batches (one NATS
// message for many, each publication's record once per batch), in the
// order they were made. An owner answers a log append's operations
// together with the outboxes corked, so that its replies to one node
// share a message: a message costs far more than its bytes here
// (docs/cluster-benchmarks.md).
type outbox struct {
	nc *nats.Conn
	// publish sends a message: nc.Publish, but for the tests that lose or
	// refuse batches on their way.
	publish func(subject string, data []byte) error
	subject string // the holder's ".n"
	replies string // the holder's reply subjects: + ".r.<call>"
	sent    *counters
	kick    chan struct{}

	mu     sync.Mutex
	refs   sentRefs // what the holder keeps of past results
	closed bool
	corks  int // while above 0 nothing wakes the sender
	// queue holds the batches NATS refused (a closed or reconnecting
	// connection past its buffer) and full ones sealed by notify for the
	// sender, oldest first: each goes before any later one, since the
	// holder checks the order (Prev). Past
	// maxQueued bytes the oldest are dropped, and the holder repairs what
	// they held from the owner's store (holder.pass, holder.lost).
	queue  [][]byte
	queued int
	retry  bool // a retry is due
	batch
}

// maxQueued bounds the bytes of refused batches an outbox keeps.
const maxQueued = 64 << 20

// batch is notifications and ended routes encoded for one holder.
type batch struct {
	buf  []byte
	pubs map[*subscriptions.Publication]uint64 // index of each publication in buf
	npub uint64
}

func (b *batch) reset() {
	b.buf = b.buf[:0]
	clear(b.pubs)
	b.npub = 0
}

func (b *batch) note(route uint64, n *delivery.Notification) {
	if b.pubs == nil {
		b.pubs = map[*subscriptions.Publication]uint64{}
	}
	i, ok := b.pubs[n.Pub]
	if !ok {
		i = b.npub
		b.npub++
		b.pubs[n.Pub] = i
		b.buf = append(b.buf, batchPub)
		b.buf = listdb.AppendSizedPublication(b.buf, n.Pub)
		b.buf = appendBytes(b.buf, n.Body)
	}
	b.buf = append(b.buf, batchNote)
	b.buf = encodeNote(b.buf, route, n, i)
}

func (b *batch) ended(l *lostRoute) {
	j, _ := json.Marshal(l) // strings and numbers only: cannot fail
	b.buf = append(b.buf, batchEnded)
	b.buf = appendBytes(b.buf, j)
}

func (b *batch) reply(call string, data []byte) {
	b.buf = append(b.buf, batchReply)
	b.buf = appendBytes(b.buf, []byte(call))
	b.buf = appendBytes(b.buf, data)
}

// Batch entries.
const (
	batchPub   = 'P' // a publication: its record and its rendering
	batchNote  = 'M' // a notification of a publication earlier in the batch, with its Prev ('N' had none)
	batchEnded = 'E' // a route that ended: JSON lostRoute
	batchReply = 'R' // the reply to a call: its id and the encoded reply
)

// maxBatch bounds a batch's bytes (NATS payloads are limited).
const maxBatch = 512 << 10

func newOutbox(nc *nats.Conn, holder string, sent *counters, refs sentRefs) *outbox {
	b := &outbox{nc: nc, publish: nc.Publish, subject: nodeSubject + holder + ".n", replies: nodeSubject + holder + ".r.", sent: sent, refs: refs, kick: make(chan struct{}, 1)}
	go b.run()
	return b
}

func (b *outbox) run() {
	for range b.kick {
		b.mu.Lock()
		b.flush()
		b.mu.Unlock()
	}
}

// seal puts the batch in the queue, for the sender, and starts another.
// b.mu is held.
func (b *outbox) seal() {
	b.sent.batches.Add(1)
	b.enqueue(bytes.Clone(b.buf))
	b.reset()
}

// enqueue adds a batch to the queue, dropping the oldest past maxQueued
// (the holder repairs what they held). b.mu is held.
func (b *outbox) enqueue(batch []byte) {
	b.queue = append(b.queue, batch)
	b.queued += len(batch)
	for b.queued > maxQueued && len(b.queue) > 1 {
		b.queued -= len(b.queue[0])
		b.queue[0] = nil
		b.queue = b.queue[1:]
	}
}

// flush sends the batches refused before, then the batch: one that NATS
// refuses waits in the queue, with everything after it, and a retry is
// set. b.mu is held.
func (b *outbox) flush() {
	for len(b.queue) > 0 {
		if b.publish(b.subject, b.queue[0]) != nil {
			break
		}
		b.queued -= len(b.queue[0])
		b.queue[0] = nil
		b.queue = b.queue[1:]
	}
	if len(b.buf) > 0 {
		b.sent.batches.Add(1)
		if len(b.queue) > 0 || b.publish(b.subject, b.buf) != nil {
			if len(b.queue) == 0 {
				b.sent.flushErrors.Add(1)
			}
			b.enqueue(bytes.Clone(b.buf))
		}
		b.reset()
	}
	if len(b.queue) > 0 && !b.retry && !b.closed {
		b.retry = true
		time.AfterFunc(100*time.Millisecond, func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.retry = false
			if !b.closed {
				b.flush()
			}
		})
	}
}

// wake runs the sender unless corked; b.mu is held, so that close cannot
// come between.
func (b *outbox) wake() {
	if b.corks > 0 {
		return
	}
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// cork holds what is queued until uncork, so that what comes meanwhile
// leaves in one message.
func (b *outbox) cork() {
	b.mu.Lock()
	b.corks++
	b.mu.Unlock()
}

func (b *outbox) uncork() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.corks--
	if len(b.buf) > 0 && !b.closed {
		b.wake()
	}
}

// notify queues n for the holder. It never sends itself: the hub calls
// it under its route lock, and a send can wait on the socket.
func (b *outbox) notify(route uint64, n *delivery.Notification) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return // the node is closing
	}
	if len(b.buf) > maxBatch {
		b.seal()
	}
	b.note(route, n)
	b.sent.notifications.Add(1)
	b.wake()
}

func (b *outbox) ended(l *lostRoute) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.batch.ended(l)
	b.wake()
}

// reply queues r after everything queued before it, so the holder sees
// every notification made before the reply first. A reply to a subject
// other than the holder's own goes alone, after the batch, with its past
// results as records: references ride the holder's stream only.
func (b *outbox) reply(subject string, r *reply) error {
	call, ok := strings.CutPrefix(subject, b.replies)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil // the node is closing
	}
	if !ok {
		b.flush()
		b.sent.replies.Add(1)
		return b.publish(subject, encodeReply(r, nil))
	}
	data := encodeReply(r, &b.refs) // under mu: in the stream's order
	if len(b.buf)+len(data) > maxBatch {
		b.flush() // a large reply goes alone, as it would have
	}
	b.batch.reply(call, data)
	b.sent.batchedReplies.Add(1)
	b.wake()
	return nil
}

func (b *outbox) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	close(b.kick)
}

func appendBytes(b, x []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(x)))
	return append(b, x...)
}

// cork corks every outbox, so that what the caller sends until it
// uncorks them leaves in one message per holding node; uncork with what
// it returns.
func (n *Node) cork() []sender {
	n.outMu.Lock()
	defer n.outMu.Unlock()
	corked := make([]sender, 0, len(n.outboxes))
	for _, b := range n.outboxes {
		b.cork()
		corked = append(corked, b)
	}
	return corked
}

func uncork(corked []sender) {
	for _, b := range corked {
		b.uncork()
	}
}

// outbox returns the queue of what goes to node holder: this node's
// holder is sent to in process.
func (n *Node) outbox(holder string) sender {
	n.outMu.Lock()
	defer n.outMu.Unlock()
	b := n.outboxes[holder]
	if b == nil {
		if n.outboxes == nil {
			n.outboxes = map[string]sender{}
		}
		if holder == n.cfg.ID {
			b = newLocalBox(n.h)
		} else {
			b = newOutbox(n.nc, holder, &n.counters, sentRefs{instance: n.instance, render: n.cfg.Encode, counts: &n.counters})
		}
		n.outboxes[holder] = b
	}
	return b
}
