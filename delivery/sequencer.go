package delivery

import (
	"container/heap"
	"math"
	"sync"
	"sync/atomic"

	"github.com/seed84792017/cellcast/subscriptions"
)

// sequencer releases finished publications in stamp order.
type sequencer struct {
	mu    sync.Mutex
	clock subscriptions.Clock
	// The lower bounds of running publishes, which hold back later
	// publications, and of running subscribes and resumes, which do not
	// but whose routes catch up on what was dispatched meanwhile.
	pubs, joins bounds
	oldestJoin  atomic.Int64 // joins.oldest, for the dispatcher
	ready       resultHeap
	release     func([]*subscriptions.PublishResult)
}

// bounds is a multiset of lower bounds and its least element.
type bounds struct {
	n      map[int64]int
	oldest int64 // MaxInt64 when empty
}

func (b *bounds) init() { b.n, b.oldest = map[int64]int{}, math.MaxInt64 }

func (b *bounds) add(l int64) {
	b.n[l]++
	b.oldest = min(b.oldest, l)
}

func (b *bounds) remove(l int64) {
	if b.n[l]--; b.n[l] > 0 {
		return
	}
	delete(b.n, l)
	if b.oldest == l {
		b.oldest = math.MaxInt64
		for t := range b.n {
			b.oldest = min(b.oldest, t)
		}
	}
}

// beginPub registers a publish about to reach the store and returns its
// lower bound: the store stamps it later, so above the bound.
func (q *sequencer) beginPub() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	l := q.clock.Now()
	q.pubs.add(l)
	return l
}

// beginJoin registers a subscribe or resume about to reach the store.
func (q *sequencer) beginJoin() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	l := q.clock.Now()
	q.joins.add(l)
	q.oldestJoin.Store(q.joins.oldest)
	return l
}

func (q *sequencer) finishJoin(l int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.joins.remove(l)
	q.oldestJoin.Store(q.joins.oldest)
}

// finish ends the publish begun at l, queues its result (if any), and
// releases, in order, every queued result that no running publish can
// precede any more.
func (q *sequencer) finish(l int64, res *subscriptions.PublishResult) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pubs.remove(l)
	if res != nil {
		heap.Push(&q.ready, res)
	}
	var out []*subscriptions.PublishResult
	for q.ready.Len() > 0 && q.ready[0].Pub.Tp < q.pubs.oldest {
		out = append(out, heap.Pop(&q.ready).(*subscriptions.PublishResult))
	}
	if len(out) > 0 {
		// Under q.mu, so releases keep their order.
		q.release(out)
	}
}

type resultHeap []*subscriptions.PublishResult

func (h resultHeap) Len() int           { return len(h) }
func (h resultHeap) Less(i, j int) bool { return h[i].Pub.Tp < h[j].Pub.Tp }
func (h resultHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *resultHeap) Push(x any)        { *h = append(*h, x.(*subscriptions.PublishResult)) }
func (h *resultHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
