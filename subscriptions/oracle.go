package subscriptions

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Oracle is the matching rule by brute force over everything ever stored:
// the reference the storage architectures are tested against. It keeps
// all records in memory and scans them all on every operation.
type Oracle struct {
	mu     sync.Mutex
	clock  Clock
	limits Limits
	subs   []*Subscription
	pubs   []*Publication
	cancel map[string]bool // sids cancelled
	ops    int
}

// prune forgets expired records: every rule needs Tmax ≥ now, and the clock
// only moves forward, so they can never match again.
func (o *Oracle) prune(now int64) {
	if o.ops++; o.ops%1024 != 0 {
		return
	}
	subs := o.subs[:0]
	for _, s := range o.subs {
		if s.Tmax >= now-int64(ResumeGrace) {
			subs = append(subs, s)
		} else {
			delete(o.cancel, s.Sid())
		}
	}
	o.subs = subs
	pubs := o.pubs[:0]
	for _, p := range o.pubs {
		if p.Tmax >= now {
			pubs = append(pubs, p)
		}
	}
	o.pubs = pubs
}

// NewOracle returns an empty oracle stamping with clock.
func NewOracle(clock Clock, limits Limits) *Oracle {
	return &Oracle{clock: clock, limits: limits.WithDefaults(), cancel: map[string]bool{}}
}

// Subscribe implements Store.
func (o *Oracle) Subscribe(_ context.Context, req *SubscribeRequest) (*SubscribeResult, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	s, err := o.limits.NewSubscription(req, o.clock.Now())
	if err != nil {
		return nil, err
	}
	now := s.Ts
	o.prune(now)
	res := &SubscribeResult{Sub: s}
	for _, p := range o.pubs {
		if o.match(p, &s, now) && !(s.SelfJoin && o.seenBy(p, &s)) && req.Query.Keeps(p) {
			res.Past = append(res.Past, *p)
		}
	}
	if s.Tmax > now {
		o.subs = append(o.subs, &s)
		res.Stored = true
	}
	SortPublications(res.Past)
	res.Past = req.Query.Cut(res.Past)
	return res, nil
}

// seenBy reports whether p reached the user of s already, through an
// earlier subscription of theirs that was live when s came and has not
// been cancelled, and that is a self-join or lies in a cell overlapping
// s's (docs/storage.md, the self-join rule), by brute force over every
// subscription the oracle holds.
func (o *Oracle) seenBy(p *Publication, s *Subscription) bool {
	for _, x := range o.subs {
		if x.Uid == s.Uid && x.Ts < s.Ts && x.Tmax >= s.Ts && !o.cancel[x.Sid()] && (x.SelfJoin || overlapsAny(x.Cell, x.Cover, s.Cell, s.Cover)) && o.match(p, x, max(p.Tp, x.Ts)) {
			return true
		}
	}
	return false
}

// Publish implements Store.
func (o *Oracle) Publish(_ context.Context, req *PublishRequest) (*PublishResult, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	p, err := o.limits.NewPublication(req, o.clock.Now())
	if err != nil {
		return nil, err
	}
	now := p.Tp
	o.prune(now)
	res := &PublishResult{Pub: p}
	for _, s := range o.subs {
		if !o.cancel[s.Sid()] && o.match(&p, s, now) {
			res.Matches = append(res.Matches, Matched{Ts: s.Ts, Uid: s.Uid})
		}
	}
	if req.SelfJoin {
		for _, q := range o.pubs {
			if q.Tmax >= now && overlapsAny(q.Cell, q.Cover, p.Cell, p.Cover) && oracleMeets(q.Shape, q.Cells(), p.Shape, p.Cells()) {
				res.Recent = append(res.Recent, *q)
			}
		}
	}
	if p.Tmax > now {
		o.pubs = append(o.pubs, &p)
		res.Stored = true
	}
	SortMatches(res.Matches)
	SortPublications(res.Recent)
	return res, nil
}

// Unsubscribe implements Store.
func (o *Oracle) Unsubscribe(_ context.Context, sid string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, err := o.live(sid, o.clock.Now()); err != nil {
		return err
	}
	o.cancel[sid] = true
	return nil
}

// live finds the subscription sid, uncancelled and live at now. o.mu is
// held.
func (o *Oracle) live(sid string, now int64) (*Subscription, error) {
	if _, _, err := ParseID(sid); err != nil {
		return nil, err
	}
	for _, s := range o.subs {
		if s.Sid() == sid && !o.cancel[sid] && s.Tmax >= now {
			return s, nil
		}
	}
	return nil, fmt.Errorf("%w: %s", ErrUnknownSid, sid)
}

func (o *Oracle) Lookup(_ context.Context, sid string) (Subscription, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	s, err := o.live(sid, o.clock.Now())
	if err != nil {
		return Subscription{}, err
	}
	return *s, nil
}

func (o *Oracle) Replay(_ context.Context, sid string, after int64) (*ReplayResult, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.clock.Now()
	s, err := o.live(sid, now-int64(ResumeGrace))
	if err != nil {
		return nil, err
	}
	res := &ReplayResult{Sub: *s, Now: now}
	for _, p := range o.pubs {
		if p.Tp > after && p.Tp > s.Ts && p.Tmax >= now && o.match(p, s, p.Tp) {
			res.Pubs = append(res.Pubs, *p)
		}
	}
	SortPublications(res.Pubs)
	slices.Reverse(res.Pubs)
	return res, nil
}

func (o *Oracle) Close() error { return nil }

// match is the matching rule with the oracle's own geometry.
func (o *Oracle) match(p *Publication, s *Subscription, now int64) bool {
	return matchIndex(p, s, now) && oracleMeets(p.Shape, p.Cells(), s.Shape, s.Cells())
}
