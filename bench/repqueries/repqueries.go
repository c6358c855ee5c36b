package repqueries

import (
	"container/heap"
	"context"
	"time"

	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/lsm"
	"github.com/seed84792017/cellcast/subscriptions"
)

// Store is the RepQueries baseline.
type Store struct {
	inner *listdb.Store
	clock subscriptions.Clock
	tr    time.Duration
	due   queue
	// Requeried counts the repeated queries run so far.
	Requeried int
	// Found counts the publications they returned.
	Found int
}

// Open opens a publications-only store in dir that re-queries every tr.
func Open(dir string, cfg listdb.Config, opts *lsm.Options, tr time.Duration) (*Store, error) {
	db, err := lsm.Open(dir, cfg.DBOptions(opts, 1))
	if err != nil {
		return nil, err
	}
	inner, err := listdb.NewStore(pubsOnly{db}, cfg)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Store{inner: inner, clock: cfg.Clock, tr: tr}, nil
}

// Subscribe runs the historic query now and schedules the repeats.
func (s *Store) Subscribe(ctx context.Context, req *subscriptions.SubscribeRequest) (*subscriptions.SubscribeResult, error) {
	q := *req
	q.Future = 0 // nothing is stored for future publications
	res, err := s.inner.Subscribe(ctx, &q)
	if err != nil {
		return nil, err
	}
	now := res.Sub.Ts
	heap.Push(&s.due, &pending{req: *req, last: now, next: now + int64(s.tr), end: now + int64(req.Future)})
	return res, nil
}

// Publish only writes.
func (s *Store) Publish(ctx context.Context, req *subscriptions.PublishRequest) (*subscriptions.PublishResult, error) {
	return s.inner.Publish(ctx, req)
}

// Tick runs every repeated query due by now: each asks for what was
// published since the subscription's previous query.
func (s *Store) Tick(ctx context.Context, now int64) error {
	for len(s.due) > 0 && s.due[0].next <= now {
		p := heap.Pop(&s.due).(*pending)
		q := p.req
		q.Past, q.Future = time.Duration(now-p.last), 0
		res, err := s.inner.Subscribe(ctx, &q)
		if err != nil {
			return err
		}
		s.Requeried++
		s.Found += len(res.Past)
		p.last, p.next = res.Sub.Ts, now+int64(s.tr)
		if p.last < p.end {
			heap.Push(&s.due, p)
		}
	}
	return nil
}

// Close closes the store.
func (s *Store) Close() error { return s.inner.Close() }

type pending struct {
	req             subscriptions.SubscribeRequest
	last, next, end int64
}

type queue []*pending

func (q queue) Len() int           { return len(q) }
func (q queue) Less(i, j int) bool { return q[i].next < q[j].next }
func (q queue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)        { *q = append(*q, x.(*pending)) }
func (q *queue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// pubsOnly keeps publication lists in one DB; there are no subscription
// lists to read.
type pubsOnly struct{ db *lsm.DB }

func (b pubsOnly) Append(appends []listdb.Append) (listdb.Commit, error) {
	batch := lsm.NewBatch()
	for _, a := range appends {
		if a.List == listdb.Pubs {
			if err := batch.Merge(a.Cell, a.Fragment); err != nil {
				return listdb.Commit{}, err
			}
		}
	}
	pos, err := b.db.ApplyNoSyncWait(batch)
	return listdb.Commit{Pos: pos}, err
}

func (b pubsOnly) Wait(c listdb.Commit, sync bool) error { return b.db.WaitWAL(c.Pos, sync) }

func (b pubsOnly) Visit(cell, subtreeEnd []byte, lists listdb.Lists, filters []lsm.BlockPropertyFilter, fn func(listdb.List, *lsm.Fragment) lsm.VisitDecision) error {
	if !lists.Pubs {
		return nil
	}
	visit := func(f *lsm.Fragment) lsm.VisitDecision { return fn(listdb.Pubs, f) }
	if err := b.db.VisitKey(cell, &lsm.VisitOptions{Filters: filters}, visit); err != nil || subtreeEnd == nil {
		return err
	}
	o := &lsm.VisitOptions{Filters: filters, Prefix: listdb.DescendantsPrefix(cell, false, 0)}
	return b.db.VisitRange(append(append([]byte(nil), cell...), 0x02), subtreeEnd, o, visit)
}

func (b pubsOnly) Meta() listdb.MetaStore            { return listdb.LSMMeta(b.db) }
func (b pubsOnly) Flush() error                      { return b.db.Flush() }
func (b pubsOnly) Compact(ctx context.Context) error { return b.db.Compact(ctx, nil, nil) }
func (b pubsOnly) Checkpoint(dir string) error       { return b.db.Checkpoint(dir) }
func (b pubsOnly) Metrics() []*lsm.Metrics           { return []*lsm.Metrics{b.db.Metrics()} }
func (b pubsOnly) Err() error                        { return b.db.Err() }
func (b pubsOnly) Close() error                      { return b.db.Close() }
