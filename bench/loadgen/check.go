package loadgen

import (
	"fmt"
	"time"

	"github.com/seed84792017/cellcast/bench/owed"
)

// maxSpelled bounds the subscriptions checked pair by pair when their
// tallies differ: each costs its pairs in memory.
const maxSpelled = 1000

// report checks what the spools hold against the oracle and reports; the
// first spool holds the past results, the others the notifications.
func (r *run) report(elapsed time.Duration, spools []*spool) (*Report, error) {
	rep := &Report{Ops: len(r.cfg.Ops), Seconds: elapsed.Seconds(), Errors: r.errs, ErrorExamples: r.examples,
		BrokerCuts: r.cuts, Drops: r.drops.Load(), Resumes: r.resumes.Load(), LateResumes: r.lateResumes.Load(), Reply: r.replyLat.percentiles(),
		LongestGaps: r.gaps.longest(3), Shards: r.shards.delivered()}
	rep.OpsPerSec = float64(rep.Ops) / rep.Seconds
	rep.PastResults = int(spools[0].count())
	for _, s := range spools[1:] {
		rep.Notifications += int(s.count())
	}
	rep.NotesPerSec = float64(rep.Notifications) / rep.Seconds

	// The acknowledged operations, as the oracle takes them. Records name
	// operations by index: subAt maps a subscription's to its index in
	// subs (-1: not acknowledged), subOp the other way.
	var subs []owed.Sub
	var pubs []owed.Pub
	subAt := make([]int32, len(r.subs))
	var subOp []int32
	for i := range r.subs {
		subAt[i] = -1
		if s := &r.subs[i]; s.ok {
			subAt[i] = int32(len(subs))
			subOp = append(subOp, int32(i))
			subs = append(subs, owed.Sub{Uid: s.op.Uid, Cell: s.op.Cell.String(), Ts: s.ts,
				Tmin: s.ts - int64(s.op.Past), Tmax: s.ts + int64(s.op.Future), SelfJoin: s.op.SelfJoin})
		}
		if p := &r.pubs[i]; p.ok {
			pubs = append(pubs, owed.Pub{Cell: p.op.Cell.String(), Tp: p.tp, Tmax: p.tp + int64(p.op.Expires)})
		}
	}
	// resolve finds a record's subscription (in subs) and publication
	// (its stamp); ok is false for a record the oracle has no pair for.
	resolve := func(x rec) (sub int, p *pubRec, ok bool) {
		if x.sub < 0 || x.sub >= int64(len(subAt)) || x.pub < 0 || x.pub >= int64(len(r.pubs)) {
			return -1, nil, false
		}
		sub, p = int(subAt[x.sub]), &r.pubs[x.pub]
		return sub, p, sub >= 0 && p.ok
	}
	rep.Subscribes, rep.Publishes = len(subs), len(pubs)
	want := owed.NewTally(len(subs))
	owed.Walk(subs, pubs, want.Add)
	c := &rep.Completeness
	c.ExpectedLive, c.ExpectedPast = int(want.Total(owed.Live)), int(want.Total(owed.Past))

	// What arrived, tallied the same way; a notification for a
	// subscription never acknowledged is unexpected outright.
	got := owed.NewTally(len(subs))
	lat := newHisto()
	example := func(e string) {
		if len(c.Examples) < 20 {
			c.Examples = append(c.Examples, e)
		}
	}
	if err := eachRec(spools, func(k owed.Kind, x rec) {
		i, p, ok := resolve(x)
		switch {
		case !ok && i >= 0 && p.unknown:
			c.FromUnanswered++
		case !ok:
			c.Unexpected++
			example(fmt.Sprintf("%s unexpected: subscription of operation %d, publication of operation %d", k, x.sub, x.pub))
		default:
			if k == owed.Live {
				lat.record(x.at - p.due)
			}
			got.Add(k, i, p.tp)
		}
	}); err != nil {
		return nil, err
	}
	rep.Latency = lat.percentiles()

	// The subscriptions whose tallies differ, pair by pair.
	bad := map[int]bool{}
	for _, k := range []owed.Kind{owed.Live, owed.Past} {
		for _, i := range want.Differ(got, k) {
			if !bad[i] {
				c.Mismatched++
				if len(bad) < maxSpelled {
					bad[i] = true
				} else {
					c.NotSpelled++
				}
			}
		}
	}
	if len(bad) > 0 {
		owedPairs, gotPairs := owed.Pairs{}, owed.Pairs{}
		owed.Walk(subs, pubs, owedPairs.Only(bad))
		only := gotPairs.Only(bad)
		if err := eachRec(spools, func(k owed.Kind, x rec) {
			if i, p, ok := resolve(x); ok {
				only(k, i, p.tp)
			}
		}); err != nil {
			return nil, err
		}
		for _, p := range owed.Compare(owedPairs, gotPairs) {
			what := ""
			switch {
			case p.Got == 0:
				c.Missing++
				what = "missing"
			case p.Owed == 0:
				c.Unexpected++
				what = "unexpected"
			default:
				c.Duplicates++
				what = fmt.Sprintf("%d times", p.Got)
			}
			example(fmt.Sprintf("%s %s: subscription %s, publication %s", p.Kind, what, r.describeSub(int(subOp[p.Sub])), r.describePub(p.Tp)))
		}
	}
	if r.cfg.MetricsURL != "" {
		m, err := scrape(r.cfg.MetricsURL)
		if err != nil {
			return nil, err
		}
		rep.Broker = m
	}
	return rep, nil
}

// eachRec reads the spools: the first holds past results, the others
// notifications.
func eachRec(spools []*spool, f func(owed.Kind, rec)) error {
	for i, s := range spools {
		k := owed.Live
		if i == 0 {
			k = owed.Past
		}
		if err := s.each(func(x rec) { f(k, x) }); err != nil {
			return err
		}
	}
	return nil
}
