package loadgen

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seed84792017/cellcast/dewey"
)

// Gap is a stretch without a successful reply in a group of cells: how
// long a failover kept a cluster's shard unserved, as its clients saw it.
type Gap struct {
	Cells string  `json:"cells"` // the group's prefix ("" when there is one group)
	Ms    float64 `json:"ms"`
	EndS  float64 `json:"end_s"` // when it ended, seconds into the run
}

// gaps keeps the longest gap of each group of cells, the groups being the
// cells' first depth components. The first gap of a group runs from the
// start of the run.
type gaps struct {
	mu    sync.Mutex
	t0    time.Time
	depth int
	last  map[string]time.Time
	worst map[string]span
}

type span struct{ d, end time.Duration }

func (g *gaps) start(t0 time.Time, depth int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.t0, g.depth, g.last, g.worst = t0, depth, map[string]time.Time{}, map[string]span{}
}

// ok notes a successful reply for an operation on cell at now.
func (g *gaps) ok(cell dewey.ID, now time.Time) {
	key := cell[:min(g.depth, len(cell))].String()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.last == nil {
		return // a reply before the run's start
	}
	prev, seen := g.last[key]
	if !seen {
		prev = g.t0
	}
	g.last[key] = now
	if d := now.Sub(prev); d > g.worst[key].d {
		g.worst[key] = span{d, now.Sub(g.t0)}
	}
}

// longest returns the n longest gaps of different groups, longest first.
func (g *gaps) longest(n int) []Gap {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []Gap
	for key, x := range g.worst {
		out = append(out, Gap{Cells: key, Ms: float64(x.d.Microseconds()) / 1000, EndS: x.end.Seconds()})
	}
	slices.SortFunc(out, func(a, b Gap) int { return cmp.Or(cmp.Compare(b.Ms, a.Ms), strings.Compare(a.Cells, b.Cells)) })
	return out[:min(n, len(out))]
}
