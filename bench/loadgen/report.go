package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/subscriptions"
)

// Report is a run's outcome; cmd/loadgen prints it as JSON.
type Report struct {
	Ops           int            `json:"ops"`
	Subscribes    int            `json:"subscribes"`
	Publishes     int            `json:"publishes"`
	Errors        map[string]int `json:"errors,omitempty"` // by kind: "op: code"
	ErrorExamples []string       `json:"error_examples,omitempty"`
	Seconds       float64        `json:"seconds"`
	OpsPerSec     float64        `json:"ops_per_sec"`
	Notifications int            `json:"notifications"` // every notification frame, replays included
	NotesPerSec   float64        `json:"notifications_per_sec"`
	PastResults   int            `json:"past_results"`
	Drops         int64          `json:"drops"`
	BrokerCuts    map[string]int `json:"broker_cuts,omitempty"` // connections the broker closed, by reason; resumed
	Resumes       int64          `json:"resumes"`
	LateResumes   int64          `json:"late_resumes,omitempty"` // subscriptions that ended past the grace before their resume arrived
	// Latency is publish→notify: from each publication's scheduled time to
	// its notification's arrival, in milliseconds. Reply is request→reply,
	// likewise from the scheduled time.
	Latency      Percentiles  `json:"latency_ms"`
	Reply        Percentiles  `json:"reply_ms"`
	Completeness Completeness `json:"completeness"`
	Broker       *Metrics     `json:"broker,omitempty"`
}

// Percentiles of a latency distribution, in milliseconds.
type Percentiles struct {
	P50, P90, P99, P999, Max float64
	N                        int64
}

// Completeness compares what arrived with the oracle's answer.
type Completeness struct {
	ExpectedLive int      `json:"expected_live"`
	ExpectedPast int      `json:"expected_past"`
	Missing      int      `json:"missing"`
	Duplicates   int      `json:"duplicates"`
	Unexpected   int      `json:"unexpected"`
	Examples     []string `json:"examples,omitempty"` // the first few problems, spelled out
}

// OK reports whether everything expected arrived once and nothing else.
func (c Completeness) OK() bool { return c.Missing == 0 && c.Duplicates == 0 && c.Unexpected == 0 }

// histo is a concurrent HDR histogram of microseconds.
type histo struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
}

func newHisto() *histo { return &histo{h: hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)} }

func (h *histo) record(ns int64) {
	h.mu.Lock()
	h.h.RecordValue(max(1, ns/1000))
	h.mu.Unlock()
}

func (h *histo) percentiles() Percentiles {
	h.mu.Lock()
	defer h.mu.Unlock()
	ms := func(q float64) float64 { return float64(h.h.ValueAtQuantile(q)) / 1000 }
	return Percentiles{P50: ms(50), P90: ms(90), P99: ms(99), P999: ms(99.9), Max: float64(h.h.Max()) / 1000, N: h.h.TotalCount()}
}

// fixedClock stamps the oracle's next operation with the broker's stamp.
type fixedClock struct{ t int64 }

func (c *fixedClock) Now() int64 { return c.t }

type pair struct{ ts, tp int64 }

// report replays the stamped operations through the oracle and compares.
func (r *run) report(elapsed time.Duration, notes []note) (*Report, error) {
	rep := &Report{Ops: len(r.cfg.Ops), Seconds: elapsed.Seconds(), Errors: r.errs, ErrorExamples: r.examples,
		BrokerCuts: r.cuts, Drops: r.drops.Load(), Resumes: r.resumes.Load(), LateResumes: r.lateResumes.Load(), Reply: r.replyLat.percentiles()}
	rep.OpsPerSec = float64(rep.Ops) / rep.Seconds
	rep.Notifications = len(notes)
	rep.NotesPerSec = float64(len(notes)) / rep.Seconds

	// The oracle, fed in stamp order.
	type event struct {
		t   int64
		sub *subRec
		pub *pubRec
	}
	var evs []event
	due := map[int64]int64{} // tp → scheduled time
	for i := range r.subs {
		if s := &r.subs[i]; s.ok {
			evs = append(evs, event{t: s.ts, sub: s})
			rep.Subscribes++
		}
		if p := &r.pubs[i]; p.ok {
			evs = append(evs, event{t: p.tp, pub: p})
			due[p.tp] = p.due
			rep.Publishes++
		}
	}
	slices.SortFunc(evs, func(a, b event) int { return int(min(max(a.t-b.t, -1), 1)) })
	clock := &fixedClock{}
	oracle := subscriptions.NewOracle(clock, subscriptions.Limits{})
	ctx := context.Background()
	live, past := map[pair]int{}, map[pair]int{}
	for _, e := range evs {
		clock.t = e.t
		if s := e.sub; s != nil {
			res, err := oracle.Subscribe(ctx, &subscriptions.SubscribeRequest{Uid: s.op.Uid, Cell: cell(s.op.Cell),
				Past: s.op.Past, Future: s.op.Future, SelfJoin: s.op.SelfJoin})
			if err != nil {
				return nil, fmt.Errorf("loadgen: the oracle refused a subscription the broker took: %w", err)
			}
			for _, p := range res.Past {
				past[pair{s.ts, p.Tp}] = 0
			}
			continue
		}
		p := e.pub
		res, err := oracle.Publish(ctx, &subscriptions.PublishRequest{Uid: p.op.Uid, Cell: cell(p.op.Cell),
			Expires: p.op.Expires, Desc: p.op.Desc, SelfJoin: p.op.SelfJoin})
		if err != nil {
			return nil, fmt.Errorf("loadgen: the oracle refused a publication the broker took: %w", err)
		}
		for _, s := range res.Matches {
			live[pair{s.Ts, p.tp}] = 0
		}
	}
	rep.Completeness.ExpectedLive, rep.Completeness.ExpectedPast = len(live), len(past)

	lat := newHisto()
	for _, n := range notes {
		k := pair{n.ts, n.tp}
		if c, ok := live[k]; ok {
			live[k] = c + 1
		} else {
			live[k] = -1 << 30 // unexpected
		}
		if d, ok := due[n.tp]; ok {
			lat.record(n.at - d)
		}
	}
	rep.Latency = lat.percentiles()
	for i := range r.subs {
		s := &r.subs[i]
		for _, tp := range s.results {
			rep.PastResults++
			k := pair{s.ts, tp}
			if c, ok := past[k]; ok {
				past[k] = c + 1
			} else {
				past[k] = -1 << 30
			}
		}
	}
	c := &rep.Completeness
	example := func(kind string, k pair) {
		if len(c.Examples) < 20 {
			c.Examples = append(c.Examples, fmt.Sprintf("%s: subscription %s, publication %s", kind, r.describeSub(k.ts), r.describePub(k.tp)))
		}
	}
	for name, m := range map[string]map[pair]int{"live": live, "past": past} {
		for k, n := range m {
			switch {
			case n == 0:
				c.Missing++
				example(name+" missing", k)
			case n < 0:
				c.Unexpected++
				example(name+" unexpected", k)
			case n > 1:
				c.Duplicates++
				example(fmt.Sprintf("%s %d times", name, n), k)
			}
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

func cell(id dewey.ID) subscriptions.Cell {
	return subscriptions.Cell{NS: subscriptions.NSCell, ID: id}
}

func (r *run) describeSub(ts int64) string {
	for i := range r.subs {
		if s := &r.subs[i]; s.ok && s.ts == ts {
			return fmt.Sprintf("%s (uid %s, cell %s, past %v, future %v)", s.sid, s.op.Uid, s.op.Cell, s.op.Past, s.op.Future)
		}
	}
	return strconv.FormatInt(ts, 36) + " (not answered)"
}

func (r *run) describePub(tp int64) string {
	for i := range r.pubs {
		if p := &r.pubs[i]; p.ok && p.tp == tp {
			return fmt.Sprintf("%s (uid %s, cell %s, expires %v, %q)", strconv.FormatInt(tp, 36), p.op.Uid, p.op.Cell, p.op.Expires, p.op.Desc)
		}
	}
	return strconv.FormatInt(tp, 36) + " (not answered)"
}

// Metrics are what the broker's /metrics said at the end.
type Metrics struct {
	RSSMiB float64            `json:"rss_mib"`
	LSM    map[string]float64 `json:"lsm,omitempty"` // cellcast_lsm_* series, by name and labels
}

// scrape reads the broker's Prometheus text.
func scrape(url string) (*Metrics, error) {
	if url == "" {
		return nil, fmt.Errorf("loadgen: no metrics URL")
	}
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return nil, fmt.Errorf("loadgen: metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("loadgen: metrics: %s", resp.Status)
	}
	m := &Metrics{LSM: map[string]float64{}}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		if i < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil || math.IsNaN(v) {
			continue
		}
		switch name := line[:i]; {
		case name == "process_resident_memory_bytes":
			m.RSSMiB = v / (1 << 20)
		case strings.HasPrefix(name, "cellcast_lsm_"):
			m.LSM[name] = v
		}
	}
	return m, sc.Err()
}
