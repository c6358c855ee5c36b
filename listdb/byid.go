package listdb

import (
	"context"
	"fmt"
	"slices"

	"github.com/seed84792017/cellcast/lsm"
	"github.com/seed84792017/cellcast/subscriptions"
)

// Unsubscribe implements subscriptions.Store.
func (st *Store) Unsubscribe(ctx context.Context, sid string, stamped subscriptions.Stamped) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	st.mu.Lock()
	now := st.clock.Now()
	st.cfg.inflight.begin(now)
	defer st.cfg.inflight.end(now)
	found, keys, err := st.find(sid, now)
	var c Commit
	if err == nil {
		if found.SelfJoin {
			keys = append(keys, userKey(found.Uid))
		}
		c, err = st.write(Subs, keys, EncodeCancel(now, found.Ts, found.Tmax), now)
	}
	st.mu.Unlock()
	stamped.Mark()
	if err != nil {
		return err
	}
	return st.settle(c)
}

// find returns the subscription sid if it is uncancelled and live at
// liveAt, and the keys it is stored under: its id names its cell, or its
// cover's first, and the record found there lists the others.
func (st *Store) find(sid string, liveAt int64) (subscriptions.Subscription, [][]byte, error) {
	var s subscriptions.Subscription
	ts, cell, err := subscriptions.ParseID(sid)
	if err != nil {
		return s, nil, err
	}
	if err := st.limits.CheckCell(cell); err != nil {
		return s, nil, fmt.Errorf("%w: %w", subscriptions.ErrBadID, err)
	}
	keys, err := st.cellsFor(cell)
	if err != nil {
		return s, nil, err
	}
	var found *Rec
	cancelled := false
	var ferr error
	// A cancel is newer than its subscription, so it comes first.
	err = st.b.Visit(keys[0], nil, Lists{Subs: true}, nil, func(_ List, f *lsm.Fragment) lsm.VisitDecision {
		ferr = forEach(f.Value, func(r *Rec) bool {
			switch {
			case r.Kind == KindCancel && r.Aux == ts:
				cancelled = true
			case r.Kind == KindSubscription && r.T == ts:
				rc := *r
				found = &rc
				return false
			}
			return true
		})
		if ferr != nil || found != nil || cancelled {
			return lsm.VisitStop
		}
		return lsm.VisitContinue
	})
	if err == nil {
		err = ferr
	}
	if err != nil {
		return s, nil, err
	}
	if found == nil || cancelled || found.Tmax < liveAt {
		return s, nil, fmt.Errorf("%w: %s", subscriptions.ErrUnknownSid, sid)
	}
	if s, err = found.Subscription(); err == nil && s.Cover != nil {
		keys, err = st.keysFor(s.Cover.Cells)
	}
	return s, keys, err
}

// stamp takes a stamp for a read-only operation, which is in flight until
// the caller calls st.cfg.inflight.end. Taking it under st.mu means every
// record stamped earlier has been written.
func (st *Store) stamp() (int64, Commit) {
	st.mu.Lock()
	defer st.mu.Unlock()
	now := st.clock.Now()
	st.cfg.inflight.begin(now)
	return now, st.last
}

// Lookup implements subscriptions.Store.
func (st *Store) Lookup(ctx context.Context, sid string) (subscriptions.Subscription, error) {
	now, _ := st.stamp()
	defer st.cfg.inflight.end(now)
	s, _, err := st.find(sid, now)
	return s, err
}

// Replay implements subscriptions.Store.
func (st *Store) Replay(ctx context.Context, sid string, after int64) (*subscriptions.ReplayResult, error) {
	now, last := st.stamp()
	defer st.cfg.inflight.end(now)
	s, _, err := st.find(sid, now-int64(subscriptions.ResumeGrace))
	if err != nil {
		return nil, err
	}
	res := &subscriptions.ReplayResult{Sub: s, Now: now}
	sc := st.newScanState(s.Cells())
	bound := max(s.Tmin, s.Ts, after, st.oldest(Pubs, now))
	visit := func(l List, key []byte, r *Rec) error {
		if sc.skip(r, now) || r.Kind != KindPublication || r.T <= after {
			return nil
		}
		p, err := r.Publication()
		if err != nil {
			return err
		}
		sc.mark(r.T)
		if p.Tp > s.Ts && p.Tmax >= now && st.match(&p, &s, p.Tp) && ((p.Cover == nil && s.Cover == nil) || st.reports(false, s.Cells(), sc.via, p.Cells(), key)) {
			res.Pubs = append(res.Pubs, p)
		}
		return nil
	}
	if err := st.scanCells(s.Cells(), sc, Lists{Pubs: true}, now, bound, now, visit); err != nil {
		return nil, err
	}
	subscriptions.SortPublications(res.Pubs)
	slices.Reverse(res.Pubs)
	if err := st.settleFor(last, false); err != nil { // what it replays must be durable
		return nil, err
	}
	return res, ctx.Err()
}
