package listdb

import (
	"context"
	"fmt"

	"github.com/seed84792017/cellcast/lsm"
	"github.com/seed84792017/cellcast/subscriptions"
)

// A self-join subscription and its cancel are also appended to a list of
// its user's own, so that a later self-join finds it even in a cell that
// does not overlap the new one: moving from c1 to a neighbouring c2, the
// user got a publication at their common ancestor in c1 already. Earlier
// subscriptions that are not self-joins are found as before, by the scan
// of the cells overlapping the new one; keeping every subscription in its
// user's list cost 20% of a simple subscribe (Fig. 4.8), for users who
// may never self-join. The key is outside the cell and topic namespaces,
// so the scans over cells never meet it.
const nsUser = 'u'

func userKey(uid string) []byte { return append([]byte{nsUser}, uid...) }

// priorOf adds to prior uid's uncancelled subscriptions stamped in
// [bound, now) and live at now, from the user's list, skipping those
// prior already holds.
func (st *Store) priorOf(uid string, now, bound int64, prior []*subscriptions.Subscription) ([]*subscriptions.Subscription, error) {
	have := make(map[int64]bool, len(prior))
	for _, o := range prior {
		have[o.Ts] = true
	}
	sc := &scanState{}
	var ferr error
	err := st.b.Visit(userKey(uid), nil, Lists{Subs: true}, nil, func(_ List, f *lsm.Fragment) lsm.VisitDecision {
		old := false
		err := forEach(f.Value, func(r *Rec) bool {
			switch {
			case r.T < bound:
				old = true
				return false
			case sc.skip(r, now):
			case r.Kind == KindCancel:
				sc.cancel(r.Aux)
			case r.Kind == KindSubscription && !sc.cancelled[r.T] && !have[r.T]:
				o, err := r.Subscription()
				if err != nil {
					ferr = err
					return false
				}
				have[r.T] = true
				prior = append(prior, &o)
			}
			return true
		})
		switch {
		case err != nil:
			ferr = err
			return lsm.VisitStop
		case ferr != nil:
			return lsm.VisitStop
		case old:
			return lsm.VisitSkipKey
		}
		return lsm.VisitContinue
	})
	if err == nil && ferr != nil {
		err = fmt.Errorf("list of user %q: %w", uid, ferr)
	}
	return prior, err
}

// withElsewhere adds to prior the user's subscriptions that another store
// holds (SubscribeRequest.Prior). They were found before this
// subscription was sent, so they came before it whatever the other
// store's clock stamped them: each counts as stamped before ts at latest.
func withElsewhere(prior []*subscriptions.Subscription, elsewhere []subscriptions.Subscription, ts int64) []*subscriptions.Subscription {
	for i := range elsewhere {
		o := elsewhere[i]
		o.Ts = min(o.Ts, ts-1)
		prior = append(prior, &o)
	}
	return prior
}

// SubscriptionsOf returns uid's subscriptions on cells overlapping cells
// that are live and not cancelled: what a self-join stored elsewhere
// must also leave out (a cluster keeps a user's plain subscriptions in
// their cells' shards and self-joins in another).
func (st *Store) SubscriptionsOf(ctx context.Context, uid string, cells []subscriptions.Cell) ([]subscriptions.Subscription, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now, _ := st.stamp()
	defer st.cfg.inflight.end(now)
	sc := st.newScanState(cells)
	sc.seen = map[int64]bool{} // a cover is found under each of its keys
	var out []subscriptions.Subscription
	visit := func(_ List, _ []byte, r *Rec) error {
		if sc.skip(r, now) {
			return nil
		}
		switch {
		case r.Kind == KindCancel:
			sc.cancel(r.Aux)
		case r.Kind == KindSubscription && !sc.cancelled[r.T]:
			sc.mark(r.T)
			o, err := r.Subscription()
			if err != nil {
				return err
			}
			if o.Uid == uid {
				out = append(out, o)
			}
		}
		return nil
	}
	if err := st.scanCells(cells, sc, Lists{Subs: true}, now, now, st.oldest(Subs, now), visit); err != nil {
		return nil, err
	}
	return out, nil
}
