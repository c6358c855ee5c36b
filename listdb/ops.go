package listdb

import (
	"context"
	"slices"
	"sync"

	"github.com/seed84792017/cellcast/subscriptions"
)

// Subscribe implements subscriptions.Store.
func (st *Store) Subscribe(ctx context.Context, req *subscriptions.SubscribeRequest) (*subscriptions.SubscribeResult, error) {
	var s subscriptions.Subscription
	now, stored, commit, err := st.stampAndStore(ctx, Subs, req.Stamped, func(now int64) (subscriptions.Cell, *subscriptions.Cover, int64, []byte, string, error) {
		var err error
		s, err = st.limits.NewSubscription(req, now)
		owner := ""
		if s.SelfJoin {
			owner = s.Uid // a self-join goes to its user's list too (selfjoin.go)
		}
		return s.Cell, s.Cover, s.Tmax, EncodeSubscription(&s), owner, err
	})
	if err != nil {
		return nil, err
	}
	defer st.cfg.inflight.end(now)
	res := &subscriptions.SubscribeResult{Sub: s, Stored: stored}
	// The past results are gathered in a pooled slice, then copied out.
	scratch := getPastScratch()
	past := *scratch
	defer func() { *scratch = past; putPastScratch(scratch) }()
	sc := st.newScanState(s.Cells())
	var prior []*subscriptions.Subscription
	pubBound := max(s.Tmin, st.oldest(Pubs, now))
	visit := func(l List, key []byte, r *Rec) error {
		if sc.skip(r, now) {
			return nil
		}
		switch {
		case l == Subs && r.Kind == KindCancel:
			sc.cancel(r.Aux)
		case l == Subs && r.Kind == KindSubscription && !sc.cancelled[r.T]:
			o, err := r.Subscription()
			if err != nil {
				return err
			}
			sc.mark(r.T)
			if o.Uid == s.Uid {
				prior = append(prior, &o)
			}
		case l == Pubs && r.Kind == KindPublication && r.T >= s.Tmin:
			p, err := r.Publication()
			if err != nil {
				return err
			}
			sc.mark(r.T)
			if st.match(&p, &s, now) && ((p.Cover == nil && s.Cover == nil) || st.reports(false, s.Cells(), sc.via, p.Cells(), key)) && req.Query.Keeps(&p) {
				past = append(past, p)
			}
		}
		return nil
	}
	if err := st.scanCells(s.Cells(), sc, Lists{Pubs: true, Subs: s.SelfJoin}, now, pubBound, st.oldest(Subs, now), visit); err != nil {
		return nil, err
	}
	found := past
	if s.SelfJoin {
		// The user's earlier subscriptions in cells that do not overlap
		// this one can have had a publication at a common ancestor.
		if prior, err = st.priorOf(s.Uid, now, st.oldest(Subs, now), prior); err != nil {
			return nil, err
		}
		prior = withElsewhere(prior, req.Prior, s.Ts)
		kept := found[:0]
		for i := range found {
			if !subscriptions.SelfJoinSeen(&found[i], &s, prior) {
				kept = append(kept, found[i])
			}
		}
		found = kept
	}
	subscriptions.SortPublications(found)
	res.Past = slices.Clone(req.Query.Cut(found))
	// The scan ran while other operations' fsyncs went on; now this
	// write must be durable before it is answered.
	if err := st.settleFor(commit, stored); err != nil {
		return nil, err
	}
	return res, nil
}

// Publish implements subscriptions.Store.
func (st *Store) Publish(ctx context.Context, req *subscriptions.PublishRequest) (*subscriptions.PublishResult, error) {
	var p subscriptions.Publication
	now, stored, commit, err := st.stampAndStore(ctx, Pubs, req.Stamped, func(now int64) (subscriptions.Cell, *subscriptions.Cover, int64, []byte, string, error) {
		var err error
		p, err = st.limits.NewPublication(req, now)
		return p.Cell, p.Cover, p.Tmax, EncodePublication(&p), "", err
	})
	if err != nil {
		return nil, err
	}
	defer st.cfg.inflight.end(now)
	res := &subscriptions.PublishResult{Pub: p, Stored: stored}
	sc := st.newScanState(p.Cells())
	visit := func(l List, key []byte, r *Rec) error {
		if sc.skip(r, now) {
			return nil
		}
		switch {
		case l == Subs && r.Kind == KindCancel:
			sc.cancel(r.Aux)
		case l == Subs && r.Kind == KindSubscription && !sc.cancelled[r.T] && r.Aux <= now:
			s, err := r.Subscription()
			if err != nil {
				return err
			}
			sc.mark(r.T)
			if st.match(&p, &s, now) && ((p.Cover == nil && s.Cover == nil) || st.reports(true, p.Cells(), sc.via, s.Cells(), key)) {
				res.Matches = append(res.Matches, subscriptions.Matched{Ts: s.Ts, Uid: s.Uid})
			}
		case l == Pubs && r.Kind == KindPublication:
			q, err := r.Publication()
			if err != nil {
				return err
			}
			sc.mark(r.T)
			if ((p.Cover == nil && q.Cover == nil && q.Cell.Overlaps(p.Cell)) || ((p.Cover != nil || q.Cover != nil) && st.reports(true, p.Cells(), sc.via, q.Cells(), key))) && subscriptions.PubsMeet(&p, &q) {
				res.Recent = append(res.Recent, q)
			}
		}
		return nil
	}
	if err := st.scanCells(p.Cells(), sc, Lists{Subs: true, Pubs: req.SelfJoin}, now, st.oldest(Pubs, now), st.oldest(Subs, now), visit); err != nil {
		return nil, err
	}
	subscriptions.SortPublications(res.Recent)
	if err := st.settleFor(commit, stored); err != nil {
		return nil, err
	}
	return res, nil
}

// pastScratch holds the slices subscriptions gather their past results
// in; each answer is then copied out at its size. Sized by a running
// average instead, a list still grew by doubling for every subscription
// with more than the average, and the two were 17% of the bytes a broker
// allocated at 1:3 in peerbench.
var pastScratch = sync.Pool{New: func() any { return new([]subscriptions.Publication) }}

// maxPastScratch bounds what a scratch slice may keep, so one huge answer
// does not stay pooled.
const maxPastScratch = 4096

func getPastScratch() *[]subscriptions.Publication {
	return pastScratch.Get().(*[]subscriptions.Publication)
}

// putPastScratch clears what the scratch slice holds (its publications'
// strings must not outlive their answer here) and pools it again.
func putPastScratch(p *[]subscriptions.Publication) {
	clear(*p)
	if cap(*p) > maxPastScratch {
		return
	}
	*p = (*p)[:0]
	pastScratch.Put(p)
}
