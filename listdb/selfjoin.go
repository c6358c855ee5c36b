package listdb

import (
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
