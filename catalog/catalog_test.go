package catalog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/geo"
	"github.com/seed84792017/cellcast/lsm"
	"github.com/seed84792017/cellcast/secondary"
	"github.com/seed84792017/cellcast/subscriptions"
)

var strategies = []secondary.Strategy{secondary.Embedded, secondary.Eager, secondary.Lazy, secondary.Composite, secondary.DELI, secondary.BloomHierarchy}

// oracle answers a query from the publications it was given.
func oracle(pubs []subscriptions.Publication, now int64, keep func(*subscriptions.Publication) bool, k int) []string {
	var out []subscriptions.Publication
	for _, p := range pubs {
		if p.Tmax > now && keep(&p) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b subscriptions.Publication) int { return int(b.Tp - a.Tp) })
	var ids []string
	for i := range min(k, len(out)) {
		ids = append(ids, out[i].Pid())
	}
	return ids
}

func pids(ps []subscriptions.Publication) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Pid())
	}
	return out
}

// TestQueriesMatchOracle: for every strategy, the latest K live
// publications by uid, category and time range are what a scan of every
// publication finds, through expiry, the janitor and a reopen.
func TestQueriesMatchOracle(t *testing.T) {
	for _, s := range strategies {
		t.Run(string(s), func(t *testing.T) { checkOracle(t, s) })
	}
}

func checkOracle(t *testing.T, s secondary.Strategy) {
	dir := t.TempDir()
	var now atomic.Int64
	now.Store(1e18)
	cfg := Config{Indexes: []Index{{AttrUID, s}, {"category", s}, {AttrTp, s}}, Now: now.Load}
	c, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { c.Close() }()
	rng := rand.New(rand.NewPCG(uint64(len(s)), 3))
	var pubs []subscriptions.Publication
	cats := []string{"flood", "fire", "traffic"}
	for i := range 600 {
		now.Add(int64(time.Second))
		p := subscriptions.Publication{Uid: fmt.Sprintf("u%d", rng.IntN(8)), Cell: subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1, uint32(1 + rng.IntN(4))}},
			Tp: now.Load(), Tmax: now.Load() + int64(time.Duration(30+rng.IntN(300))*time.Second), Desc: fmt.Sprintf("incident %d", i)}
		if rng.IntN(4) > 0 { // some publications have no category
			p.Attrs = map[string]string{"category": cats[rng.IntN(len(cats))], "severity": "high"}
		}
		if err := c.Add(&p); err != nil {
			t.Fatal(err)
		}
		pubs = append(pubs, p)
		switch {
		case i%150 == 149:
			if _, err := c.Expire(); err != nil {
				t.Fatal(err)
			}
		case i == 400:
			c.Close()
			if c, err = Open(dir, cfg); err != nil {
				t.Fatal(err)
			}
		}
		if i%20 != 19 {
			continue
		}
		k := 1 + rng.IntN(40)
		uid := fmt.Sprintf("u%d", rng.IntN(9)) // u8 never publishes
		v := String(uid)
		got, err := c.Find(Query{Attr: AttrUID, Eq: &v, K: k})
		want := oracle(pubs, now.Load(), func(p *subscriptions.Publication) bool { return p.Uid == uid }, k)
		if err != nil || !slices.Equal(pids(got), want) {
			t.Fatalf("pub %d: uid=%s k=%d: got %v (%v), want %v", i, uid, k, pids(got), err, want)
		}
		cat := cats[rng.IntN(len(cats))]
		v = String(cat)
		got, err = c.Find(Query{Attr: "category", Eq: &v, K: k})
		want = oracle(pubs, now.Load(), func(p *subscriptions.Publication) bool { return p.Attrs["category"] == cat }, k)
		if err != nil || !slices.Equal(pids(got), want) {
			t.Fatalf("pub %d: category=%s k=%d: got %v (%v), want %v", i, cat, k, pids(got), err, want)
		}
		for _, g := range got {
			if g.Attrs["severity"] != "high" || g.Desc == "" || g.Uid == "" {
				t.Fatalf("publication %s came back without its fields: %+v", g.Pid(), g)
			}
		}
		lo := now.Load() - int64(time.Duration(rng.IntN(400))*time.Second)
		hi := lo + int64(time.Duration(1+rng.IntN(200))*time.Second)
		from, to := Time(time.Unix(0, lo)), Time(time.Unix(0, hi))
		got, err = c.Find(Query{Attr: AttrTp, From: &from, To: &to, K: k})
		want = oracle(pubs, now.Load(), func(p *subscriptions.Publication) bool { return p.Tp >= lo && p.Tp <= hi }, k)
		if err != nil || !slices.Equal(pids(got), want) {
			t.Fatalf("pub %d: tp in [%d, %d] k=%d: got %v (%v), want %v", i, lo, hi, k, pids(got), err, want)
		}
	}
	// Everything expires; the janitor's pass empties the catalog.
	now.Add(int64(time.Hour))
	n, err := c.Expire()
	if err != nil {
		t.Fatal(err)
	}
	live := 0
	for _, p := range pubs {
		if p.Tmax > now.Load()-int64(time.Hour) {
			live++
		}
	}
	if n < live {
		t.Fatalf("expired %d publications, but %d were live before the last hour", n, live)
	}
	if left, err := c.t.RangeLookup(colExpires, secondary.IntValue(0), secondary.IntValue(1<<62), 0); err != nil || len(left) != 0 {
		t.Fatalf("%d rows left after everything expired (%v)", len(left), err)
	}
}

// TestBadQueries: each mistake is an ErrBadQuery naming what was wrong.
func TestBadQueries(t *testing.T) {
	c, err := Open(t.TempDir(), Config{Indexes: []Index{{AttrUID, secondary.Lazy}, {AttrTp, secondary.Embedded}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, i, j := String("a"), Time(time.Unix(0, 5)), Time(time.Unix(0, 1))
	for name, q := range map[string]Query{
		"unknown attribute": {Attr: "category", Eq: &s, K: 1},
		"k zero":            {Attr: AttrUID, Eq: &s, K: 0},
		"k too large":       {Attr: AttrUID, Eq: &s, K: MaxK + 1},
		"no value":          {Attr: AttrUID, K: 1},
		"eq and range":      {Attr: AttrTp, Eq: &i, From: &j, To: &i, K: 1},
		"half a range":      {Attr: AttrTp, From: &j, K: 1},
		"empty range":       {Attr: AttrTp, From: &i, To: &j, K: 1},
		"type mismatch":     {Attr: AttrTp, Eq: &s, K: 1},
		"time for a string": {Attr: AttrUID, Eq: &i, K: 1},
	} {
		if _, err := c.Find(q); !errors.Is(err, ErrBadQuery) {
			t.Errorf("%s: %v, want ErrBadQuery", name, err)
		}
	}
	if _, err := c.ParseValue(AttrTp, "yesterday"); !errors.Is(err, ErrBadQuery) {
		t.Errorf("bad time: %v", err)
	}
	if v, err := c.ParseValue(AttrTp, "2026-11-21T10:00:00Z"); err != nil || v != Time(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("time: %v, %v", v, err)
	}
}

// TestBadIndexes: a bad list or strategy fails Open with ErrBadIndexes.
func TestBadIndexes(t *testing.T) {
	for _, s := range []string{"uid", "uid=lazy,uid=eager", "=lazy"} {
		if _, err := ParseIndexes(s); !errors.Is(err, ErrBadIndexes) {
			t.Errorf("ParseIndexes(%q): %v", s, err)
		}
	}
	for _, s := range []string{"uid=fast", "expires=lazy", "a.x=lazy"} {
		ix, err := ParseIndexes(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Open(t.TempDir(), Config{Indexes: ix}); !errors.Is(err, ErrBadIndexes) {
			t.Errorf("Open with %q: %v", s, err)
		}
	}
	ix, err := ParseIndexes(DefaultIndexes)
	if err != nil || len(ix) != 3 {
		t.Fatalf("default indexes: %v, %v", ix, err)
	}
}

// TestPointKept: a publication made at a point comes back from a query
// with its point, exactly; one made at a cell comes back without.
func TestPointKept(t *testing.T) {
	c, err := Open(t.TempDir(), Config{Indexes: []Index{{AttrUID, secondary.Composite}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	now := time.Now().UnixNano()
	cell := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1, 4}}
	at, _ := geo.NewCircle(40.712345678901234, -74.00597, 250.5)
	zone, err := geo.ParseGeoJSON([]byte(`{"type":"Polygon","coordinates":[[[-74,40.7],[-73.9,40.7],[-73.9,40.8],[-74,40.7]]]}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range []*geo.Shape{zone, at, nil} {
		if err := c.Add(&subscriptions.Publication{Uid: "bob", Cell: cell, Tp: now + int64(i), Tmax: now + int64(time.Hour), Shape: p}); err != nil {
			t.Fatal(err)
		}
	}
	bob := String("bob")
	got, err := c.Find(Query{Attr: AttrUID, Eq: &bob, K: 3})
	if err != nil || len(got) != 3 {
		t.Fatalf("%v, %v", got, err)
	}
	same := func(a, b *geo.Shape) bool { return string(a.AppendBinary(nil)) == string(b.AppendBinary(nil)) }
	if got[0].Shape != nil || got[1].Shape == nil || !same(got[1].Shape, at) || got[2].Shape == nil || !same(got[2].Shape, zone) {
		t.Fatalf("shapes: %+v, %+v, %+v", got[0].Shape, got[1].Shape, got[2].Shape)
	}
}

// TestFarTimeBoundsMeanTheEnds: a tp bound outside what nanoseconds since
// 1970 hold (after 2262, before 1678) is the end of time, not an overflow
// that turns the range around.
func TestFarTimeBoundsMeanTheEnds(t *testing.T) {
	c, err := Open(t.TempDir(), Config{Indexes: []Index{{AttrTp, secondary.Embedded}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	now := time.Now().UnixNano()
	cell := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1, 4}}
	if err := c.Add(&subscriptions.Publication{Uid: "bob", Cell: cell, Tp: now, Tmax: now + int64(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]string{{"2026-01-01T00:00:00Z", "2999-01-01T00:00:00Z"}, {"1000-01-01T00:00:00Z", "2999-01-01T00:00:00Z"}, {"1000-01-01T00:00:00Z", "9999-12-31T23:59:59Z"}} {
		from, err := c.ParseValue(AttrTp, r[0])
		if err != nil {
			t.Fatal(err)
		}
		to, err := c.ParseValue(AttrTp, r[1])
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Find(Query{Attr: AttrTp, From: &from, To: &to, K: 10})
		if err != nil || len(got) != 1 {
			t.Fatalf("%s to %s: %d found, %v", r[0], r[1], len(got), err)
		}
	}
}

// TestEngineFlushDelay: an unsynced catalog lets its engines' unsynced
// writes wait 20 ms (Reconcile rebuilds what a crash loses); a synced one,
// or a caller's own delay, is left alone, and the caller's options are
// not changed.
func TestEngineFlushDelay(t *testing.T) {
	mine := &lsm.Options{BlockCacheSize: 1 << 20}
	cases := []struct {
		name string
		cfg  Config
		want time.Duration
	}{
		{"unsynced", Config{}, unsyncedFlushDelay},
		{"unsynced with options", Config{Options: mine}, unsyncedFlushDelay},
		{"synced", Config{Sync: true}, 0},
		{"caller's delay", Config{Options: &lsm.Options{WALFlushDelay: time.Millisecond}}, time.Millisecond},
	}
	for _, c := range cases {
		if got := engineOptions(c.cfg).WALFlushDelay; got != c.want {
			t.Errorf("%s: WALFlushDelay %v, want %v", c.name, got, c.want)
		}
	}
	if mine.WALFlushDelay != 0 || engineOptions(Config{Options: mine}).BlockCacheSize != 1<<20 {
		t.Errorf("the caller's options were changed or dropped: %+v", *mine)
	}
}
