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

// push queues f. It fails when the queue is full, unless force is set
// (control frames, which are few and must not be lost).
func (q *sendQueue) push(f frame, force bool) bool {
	q.mu.Lock()
	if !force && (len(q.frames) >= q.maxN || q.bytes+len(f.data) > q.maxBytes) {
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

// take returns everything queued, handing the queue spare's storage.
func (q *sendQueue) take(spare []frame) []frame {
	q.mu.Lock()
	out := q.frames
	q.frames, q.bytes = spare[:0], 0
	q.mu.Unlock()
	return out
}
