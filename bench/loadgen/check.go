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
		BrokerCuts: r.cuts, Drops: r.drops.Load(), Resumes: r.resumes.Load(), LateResumes: r.lateResumes.Load(), Reply: r.replyLat.percentiles()}
	rep.OpsPerSec = float64(rep.Ops) / rep.Seconds
	rep.PastResults = int(spools[0].count())
	for _, s := range spools[1:] {
		rep.Notifications += int(s.count())
	}
	rep.NotesPerSec = float64(rep.Notifications) / rep.Seconds

	// The acknowledged operations, as the oracle takes them.
	var subs []owed.Sub
	var pubs []owed.Pub
	bySid := map[int64]int{} // subscription stamp → index in subs
	due := map[int64]int64{} // publication stamp → scheduled time
	for i := range r.subs {
		if s := &r.subs[i]; s.ok {
			bySid[s.ts] = len(subs)
			subs = append(subs, owed.Sub{Uid: s.op.Uid, Cell: s.op.Cell.String(), Ts: s.ts,
				Tmin: s.ts - int64(s.op.Past), Tmax: s.ts + int64(s.op.Future), SelfJoin: s.op.SelfJoin})
		}
		if p := &r.pubs[i]; p.ok {
			due[p.tp] = p.due
			pubs = append(pubs, owed.Pub{Cell: p.op.Cell.String(), Tp: p.tp, Tmax: p.tp + int64(p.op.Expires)})
		}
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
		if d, ok := due[x.tp]; ok && k == owed.Live {
			lat.record(x.at - d)
		}
		i, ok := bySid[x.ts]
		if !ok {
			c.Unexpected++
			example(fmt.Sprintf("%s unexpected: subscription %s, publication %s", k, r.describeSub(x.ts), r.describePub(x.tp)))
			return
		}
		got.Add(k, i, x.tp)
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
			if i, ok := bySid[x.ts]; ok {
				only(k, i, x.tp)
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
			example(fmt.Sprintf("%s %s: subscription %s, publication %s", p.Kind, what, r.describeSub(subs[p.Sub].Ts), r.describePub(p.Tp)))
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
