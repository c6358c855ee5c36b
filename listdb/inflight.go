package listdb

import (
	"math"
	"sync"
	"sync/atomic"
)

// inflight tracks the stamps of operations between taking their stamp and
// finishing their reads, so compaction never drops a record one of them may
// still report, however long it takes.
type inflight struct {
	mu     sync.Mutex
	active map[int64]struct{}
	oldest atomic.Int64 // math.MaxInt64 when none
}

func newInflight() *inflight {
	f := &inflight{active: map[int64]struct{}{}}
	f.oldest.Store(math.MaxInt64)
	return f
}

// begin registers an operation stamped now. Stamps are issued in
// increasing order under Store.mu, which begin runs under, so a new stamp
// never lowers the oldest unless there was none.
func (f *inflight) begin(now int64) {
	f.mu.Lock()
	f.active[now] = struct{}{}
	if len(f.active) == 1 {
		f.oldest.Store(now)
	}
	f.mu.Unlock()
}

func (f *inflight) end(now int64) {
	f.mu.Lock()
	delete(f.active, now)
	if f.oldest.Load() == now {
		oldest := int64(math.MaxInt64)
		for t := range f.active {
			oldest = min(oldest, t)
		}
		f.oldest.Store(oldest)
	}
	f.mu.Unlock()
}

func (f *inflight) oldestStamp() int64 { return f.oldest.Load() }
