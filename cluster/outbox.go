package cluster

import (
	"encoding/binary"
	"encoding/json"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/delivery"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/subscriptions"
)

// outbox is, on a shard owner, everything bound for one holding node:
// notifications and ended routes go out in batches (one NATS message for
// many notifications, each publication's record once per batch), replies
// at once, all in the order they were made.
type outbox struct {
	nc      *nats.Conn
	subject string // the holder's ".n"
	sent    *counters
	kick    chan struct{}

	mu     sync.Mutex
	closed bool
	batch
}

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

// Batch entries.
const (
	batchPub   = 'P' // a publication: its record and its rendering
	batchNote  = 'N' // a notification of a publication earlier in the batch
	batchEnded = 'E' // a route that ended: JSON lostRoute
)

// maxBatch bounds a batch's bytes (NATS payloads are limited).
const maxBatch = 512 << 10

func newOutbox(nc *nats.Conn, holder string, sent *counters) *outbox {
	b := &outbox{nc: nc, subject: nodeSubject + holder + ".n", sent: sent, kick: make(chan struct{}, 1)}
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

// flush sends the batch. b.mu is held.
func (b *outbox) flush() {
	if len(b.buf) == 0 {
		return
	}
	b.sent.batches.Add(1)
	b.nc.Publish(b.subject, b.buf)
	b.reset()
}

// wake runs the sender; b.mu is held, so that close cannot come between.
func (b *outbox) wake() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

func (b *outbox) notify(route uint64, n *delivery.Notification) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return // the node is closing
	}
	if len(b.buf) > maxBatch {
		b.flush()
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

// reply sends what is batched, then the reply: the holder sees every
// notification made before the reply first.
func (b *outbox) reply(subject string, r *reply) error {
	data := encodeReply(r)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flush()
	b.sent.replies.Add(1)
	return b.nc.Publish(subject, data)
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
			b = newOutbox(n.nc, holder, &n.counters)
		}
		n.outboxes[holder] = b
	}
	return b
}
