package gateway

import "sync"

// sendQueue is a connection's outbox: bounded in messages and in bytes,
// and holding only what waits, so an idle connection costs nothing.
type sendQueue struct {
	mu       sync.Mutex
	frames   []frame
	bytes    int
	maxN     int
	maxBytes int
	ready    chan struct{} // holds a token while frames wait
}

func newSendQueue(maxN, maxBytes int) *sendQueue {
	return &sendQueue{maxN: maxN, maxBytes: maxBytes, ready: make(chan struct{}, 1)}
}

// Room, in multiples of the bounds, for each kind of frame. Notifications
// are refused at the bound (the hub replays them when the queue drains). Replies answer the client's own requests, which
// it sends at a bounded rate, so they get headroom: a resume that replays
// a backlog must not trip the limit that made it necessary. Control
// frames are few and never refused.
const (
	roomNotification = 1
	roomReply        = 4
	roomControl      = 1 << 20
)

// push queues f, unless the queue already holds room times its bounds.
func (q *sendQueue) push(f frame, room int) bool {
	q.mu.Lock()
	if len(q.frames) >= q.maxN*room || q.bytes+len(f.data) > q.maxBytes*room {
		q.mu.Unlock()
		return false
	}
	q.frames = append(q.frames, f)
	q.bytes += len(f.data)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return true
}

// pushAll queues every frame of fs, in order, or none of them if they
// would take the queue past room times its bounds.
func (q *sendQueue) pushAll(fs []frame, room int) bool {
	n := 0
	for i := range fs {
		n += len(fs[i].data)
	}
	q.mu.Lock()
	if len(q.frames)+len(fs) > q.maxN*room || q.bytes+n > q.maxBytes*room {
		q.mu.Unlock()
		return false
	}
	q.frames = append(q.frames, fs...)
	q.bytes += n
	q.mu.Unlock()
	q.kick()
	return true
}

// low reports whether the queue holds at most half its bounds.
func (q *sendQueue) low() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.frames) <= q.maxN/2 && q.bytes <= q.maxBytes/2
}

// kick wakes the writer without queueing anything.
func (q *sendQueue) kick() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take returns everything queued, handing the queue spare's storage.
func (q *sendQueue) take(spare []frame) []frame {
	q.mu.Lock()
	out := q.frames
	q.frames, q.bytes = spare[:0], 0
	q.mu.Unlock()
	return out
}
