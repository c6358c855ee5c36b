package gateway

import (
	"slices"
	"sync"

	"github.com/seed84792017/cellcast/delivery"
)

// sendQueue is a connection's outbox: bounded in messages and in bytes,
// and holding only what waits, so an idle connection costs nothing. No
// goroutine waits on it: the push that finds the writer stopped starts
// one (start), which drains the queue and stops when it is empty.
type sendQueue struct {
	mu       sync.Mutex
	frames   []frame
	bytes    int
	maxN     int
	maxBytes int
	running  bool   // a writer goroutine owns the socket
	closing  bool   // the connection is ending: the writer finishes it
	start    func() // starts the writer; called without mu
	// taken, when a reply waits for room, closes the next time the writer
	// takes what is queued.
	taken chan struct{}
}

func newSendQueue(maxN, maxBytes int, start func()) *sendQueue {
	return &sendQueue{maxN: maxN, maxBytes: maxBytes, start: start}
}

// Room, in multiples of the bounds, for each kind of frame. Notifications
// are refused at the bound (the hub replays them when the queue drains).
// Replies answer the client's own requests, which it sends at a bounded
// rate, so they get headroom: a resume that replays a backlog must not
// trip the limit that made it necessary. Control frames are few and never
// refused.
const (
	roomNotification = 1
	roomReply        = 4
	roomControl      = 1 << 20
)

// push queues f, unless the queue already holds room times its bounds.
func (q *sendQueue) push(f frame, room int) bool {
	q.mu.Lock()
	if len(q.frames) >= q.maxN*room || q.bytes+f.queued() > q.maxBytes*room {
		q.mu.Unlock()
		return false
	}
	if q.frames == nil {
		q.frames = getFrames()
	}
	q.frames = append(q.frames, f)
	q.bytes += f.queued()
	q.unlockAndWake()
	return true
}

// pushNotes queues notifications of one publication, data its body in
// the connection's encoding (binary: bin), as push would queue each at
// roomNotification, under one lock: as many as fit, from the start. It
// returns how many it took.
func (q *sendQueue) pushNotes(ns []delivery.Notification, data []byte, bin bool) int {
	q.mu.Lock()
	k := min(len(ns), max(q.maxN*roomNotification-len(q.frames), 0))
	switch free := q.maxBytes*roomNotification - q.bytes; {
	case free < 0:
		k = 0
	case len(data) > 0:
		k = min(k, free/len(data))
	}
	if k == 0 {
		q.mu.Unlock()
		return 0
	}
	if q.frames == nil {
		q.frames = getFrames()
	}
	q.frames = slices.Grow(q.frames, k)
	for i := range ns[:k] {
		n := &ns[i]
		q.frames = append(q.frames, frame{data: data, bin: bin, sid: n.Sid, seq: n.Seq, tp: n.Pub.Tp, replayed: n.Replayed})
	}
	q.bytes += k * len(data)
	q.unlockAndWake()
	return k
}

// pushAll queues every frame of fs, in order, or none of them if they
// would take the queue past room times its bounds.
func (q *sendQueue) pushAll(fs []frame, room int) bool {
	ok, _ := q.pushAllOrWait(fs, room, false)
	return ok
}

// pushAllOrWait is pushAll that, when there is no room and wait is set,
// returns a channel that closes once the writer has taken what is queued:
// the moment to try again. Frames that could never fit (more than the
// bounds allow on their own) go into an empty queue all the same.
func (q *sendQueue) pushAllOrWait(fs []frame, room int, wait bool) (bool, <-chan struct{}) {
	n := 0
	for i := range fs {
		n += fs[i].queued()
	}
	q.mu.Lock()
	if len(q.frames) > 0 && (len(q.frames)+len(fs) > q.maxN*room || q.bytes+n > q.maxBytes*room) ||
		len(q.frames) == 0 && !wait && (len(fs) > q.maxN*room || n > q.maxBytes*room) {
		var taken chan struct{}
		if wait {
			if q.taken == nil {
				q.taken = make(chan struct{})
			}
			taken = q.taken
		}
		q.mu.Unlock()
		return false, taken
	}
	if q.frames == nil {
		q.frames = getFrames()
	}
	q.frames = append(q.frames, fs...)
	q.bytes += n
	q.unlockAndWake()
	return true, nil
}

// unlockAndWake unlocks q.mu, then starts the writer unless it runs.
func (q *sendQueue) unlockAndWake() {
	start := !q.running
	q.running = true
	q.mu.Unlock()
	if start {
		q.start()
	}
}

// close tells the writer to finish the connection, starting one if none
// runs.
func (q *sendQueue) close() {
	q.mu.Lock()
	q.closing = true
	q.unlockAndWake()
}

// low reports whether the queue holds at most half its bounds.
func (q *sendQueue) low() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.frames) <= q.maxN/2 && q.bytes <= q.maxBytes/2
}

// What next tells the writer.
const (
	writeThese = iota // write the frames
	stopWriter        // nothing queued: the writer stops; the next push starts another
	finishConn        // the connection is ending
)

// next hands the writer what is queued, giving the queue spare's storage
// for what comes next, or says to stop or to finish. On stop it hands
// back the queue's own storage, empty: an idle connection keeps none.
func (q *sendQueue) next(spare []frame) ([]frame, int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.taken != nil {
		close(q.taken)
		q.taken = nil
	}
	switch {
	case q.closing:
		return nil, finishConn
	case len(q.frames) == 0:
		q.running = false
		out := q.frames
		q.frames = nil
		return out, stopWriter
	}
	out := q.frames
	q.frames, q.bytes = spare[:0], 0
	return out, writeThese
}

// rest takes what is queued once the connection is ending.
func (q *sendQueue) rest() []frame {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.frames
	q.frames, q.bytes = nil, 0
	return out
}
