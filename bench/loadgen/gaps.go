package loadgen

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Gap is a stretch without a successful reply in a shard: how long a
// failover kept a cluster's shard unserved, as its clients saw it.
type Gap struct {
	Shard string  `json:"shard"` // "" when there is one group (no Config.Shard)
	Ms    float64 `json:"ms"`
	EndS  float64 `json:"end_s"` // when it ended, seconds into the run
}

// gaps keeps the longest gap of each shard. The first gap of a shard runs
// from the start of the run.
type gaps struct {
	mu    sync.Mutex
	t0    time.Time
	last  map[string]time.Time
	worst map[string]span
}

type span struct{ d, end time.Duration }

func (g *gaps) start(t0 time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.t0, g.last, g.worst = t0, map[string]time.Time{}, map[string]span{}
}

// ok notes a successful reply for an operation in shard at now.
func (g *gaps) ok(shard string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.last == nil {
		return // a reply before the run's start
	}
	prev, seen := g.last[shard]
	if !seen {
		prev = g.t0
	}
	g.last[shard] = now
	if d := now.Sub(prev); d > g.worst[shard].d {
		g.worst[shard] = span{d, now.Sub(g.t0)}
	}
}

// longest returns the n longest gaps of different shards, longest first.
func (g *gaps) longest(n int) []Gap {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []Gap
	for key, x := range g.worst {
		out = append(out, Gap{Shard: key, Ms: float64(x.d.Microseconds()) / 1000, EndS: x.end.Seconds()})
	}
	slices.SortFunc(out, func(a, b Gap) int { return cmp.Or(cmp.Compare(b.Ms, a.Ms), strings.Compare(a.Shard, b.Shard)) })
	return out[:min(n, len(out))]
}
