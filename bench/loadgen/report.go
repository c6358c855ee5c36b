package loadgen

import (
	"bufio"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
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
	// LongestGaps are the longest stretches without a successful reply,
	// one per shard (Config.Shard): after a cluster node is killed, the
	// failover time of its shards as their clients saw it.
	LongestGaps []Gap `json:"longest_gaps,omitempty"`
	// Shards counts what arrived by the shard of the subscription it came
	// for (Config.Shard; a subscription lives in one shard, which matches
	// and sends all of its notifications), replays included.
	Shards map[string]Delivered `json:"shards,omitempty"`
	Broker *Metrics             `json:"broker,omitempty"`
}

// Percentiles of a latency distribution, in milliseconds.
type Percentiles struct {
	P50, P90, P99, P999, Max float64
	N                        int64
}

// Completeness compares what arrived with the oracle's answer (bench/owed).
// Missing, Duplicates and Unexpected count pairs in the subscriptions
// spelled out; Mismatched counts every subscription that did not get
// exactly what it was owed, spelled out or not.
type Completeness struct {
	ExpectedLive int `json:"expected_live"`
	ExpectedPast int `json:"expected_past"`
	Mismatched   int `json:"mismatched_subscriptions"`
	NotSpelled   int `json:"mismatched_not_spelled_out,omitempty"` // past the first maxSpelled
	Missing      int `json:"missing"`
	Duplicates   int `json:"duplicates"`
	Unexpected   int `json:"unexpected"`
	// FromUnanswered counts notifications and past results of
	// publications whose request failed with no known outcome (the
	// connection or the shard was lost, or the store failed): they may
	// have been stored, so these are neither owed nor unexpected.
	FromUnanswered int      `json:"from_unanswered_publications,omitempty"`
	Examples       []string `json:"examples,omitempty"` // the first few problems, spelled out
}

// OK reports whether everything expected arrived once and nothing else.
func (c Completeness) OK() bool {
	return c.Mismatched == 0 && c.Missing == 0 && c.Duplicates == 0 && c.Unexpected == 0
}

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

func (r *run) describeSub(op int) string {
	s := &r.subs[op]
	return fmt.Sprintf("%s (uid %s, cell %s, past %v, future %v)", s.sid, s.op.Uid, s.op.Cell, s.op.Past, s.op.Future)
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
