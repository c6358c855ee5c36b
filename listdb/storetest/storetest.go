package storetest

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/geo"
	"github.com/seed84792017/cellcast/geo/geotest"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/lsm"
	"github.com/seed84792017/cellcast/subscriptions"
)

var long = flag.Bool("store.long", false, "run the long differential tests")

// Opener opens a store in dir with cfg; small engine options keep flushes
// and compactions frequent.
type Opener func(dir string, cfg listdb.Config, opts *lsm.Options) (*listdb.Store, error)

// SmallEngine is lsm tuning that makes a few thousand operations span many
// flushes and compactions.
func SmallEngine() *lsm.Options {
	return &lsm.Options{MemTableSize: 64 << 10, TargetFileSize: 32 << 10, LBaseMaxBytes: 128 << 10,
		BlockSize: 1 << 10, L0CompactionThreshold: 2, L0SlowdownWritesThreshold: 4, L0StopWritesThreshold: 8}
}

const start = int64(1_700_000_000) * int64(time.Second)

var limits = subscriptions.Limits{MaxPast: time.Minute, MaxFuture: time.Minute, MaxExpiry: 2 * time.Minute}

type run struct {
	t      *testing.T
	rng    *rand.Rand
	open   Opener
	dir    string
	cfg    listdb.Config
	store  *listdb.Store
	oracle *subscriptions.Oracle
	sc, oc *subscriptions.FakeClock
	spots  [][2]float64 // where on Earth the operations gather, so that many overlap
	sids   []string
	users  []string
	fixed  bool
}

func (r *run) reopen() {
	if r.store != nil {
		if err := r.store.Close(); err != nil {
			r.t.Fatal(err)
		}
	}
	s, err := r.open(r.dir, r.cfg, SmallEngine())
	if err != nil {
		r.t.Fatal(err)
	}
	r.store = s
}

func (r *run) cell() subscriptions.Cell {
	c, err := r.cellFrom(r.rng)
	if err != nil {
		r.t.Fatal(err)
	}
	return c
}

// cellFrom draws geo cells at every depth (and, unless fixed, topics and
// another raw hierarchy), concentrated so that many overlap.
func (r *run) cellFrom(rng *rand.Rand) (subscriptions.Cell, error) {
	maxDepth := r.maxDepth()
	if !r.fixed && rng.Intn(5) == 0 {
		ns := subscriptions.NSTopic
		if rng.Intn(2) == 0 {
			ns = subscriptions.NSCell
			id := dewey.ID{7}
			for d := rng.Intn(3); d > 0; d-- {
				id = id.Child(uint32(1 + rng.Intn(300)))
			}
			return subscriptions.Cell{NS: ns, ID: id}, nil
		}
		id := dewey.ID{uint32(1 + rng.Intn(2))}
		for d := rng.Intn(3); d > 0; d-- {
			id = id.Child(uint32(1 + rng.Intn(2)))
		}
		return subscriptions.Cell{NS: ns, ID: id}, nil
	}
	// Points near a few spots so cells collide; depth skewed deep.
	lat, lng := r.near(rng)
	depth := maxDepth - int(rng.ExpFloat64())
	depth = max(1, min(depth, maxDepth))
	id, err := geo.PointCell(lat, lng, depth-1)
	return subscriptions.Cell{NS: subscriptions.NSCell, ID: id}, err
}

// near draws a point within 20 km of one of the run's spots.
func (r *run) near(rng *rand.Rand) (lat, lng float64) {
	s := r.spots[rng.Intn(len(r.spots))]
	return geotest.Destination(s[0], s[1], rng.Float64()*20000, rng.Float64()*2*math.Pi)
}

// maxDepth is the deepest cell drawn: S2 level 9 (cells of 10–20 km,
// about the size of the spots) or the leaf depth of fixed granularity.
func (r *run) maxDepth() int {
	if r.fixed {
		return r.cfg.LeafDepth
	}
	return 10
}

// shaped puts a request, one time in three, at a shape near a spot (a
// circle, a point or a polygon, up to 8 km across) on a cover of up to
// MaxCover cells (now and then one too many, which both must refuse);
// otherwise it draws a cell and, one time in five, a cover of cells.
func (r *run) shaped() (subscriptions.Cell, []subscriptions.Cell, *geo.Shape) {
	if r.rng.Intn(3) > 0 {
		return r.cell(), r.cover(), nil
	}
	lat, lng := r.near(r.rng)
	s := geotest.Shape(r.rng, lat, lng, 4000)
	k := 1 + r.rng.Intn(subscriptions.MaxCover)
	ids, err := s.Cover(k, r.maxDepth()-1)
	if err != nil {
		r.t.Fatal(err)
	}
	cells := make([]subscriptions.Cell, len(ids))
	for i, id := range ids {
		cells[i] = subscriptions.Cell{NS: subscriptions.NSCell, ID: id}
	}
	if r.rng.Intn(40) == 0 {
		for len(cells) <= subscriptions.MaxCover {
			cells = append(cells, r.cell())
		}
	}
	r.rng.Shuffle(len(cells), func(i, j int) { cells[i], cells[j] = cells[j], cells[i] })
	return subscriptions.Cell{}, cells, s
}

var words = []string{"accident", "fire", "roadwork", "flood", "parade"}

// subscribeRequest draws a valid SUBSCRIBE at c: windows up to 14 s, some
// self-joins and filters.
func subscribeRequest(rng *rand.Rand, uid string, c subscriptions.Cell) *subscriptions.SubscribeRequest {
	req := &subscriptions.SubscribeRequest{
		Uid: uid, Cell: c, SelfJoin: rng.Intn(3) == 0,
		Past:   time.Duration(rng.Intn(15)) * time.Second,
		Future: time.Duration(rng.Intn(15)) * time.Second,
	}
	if rng.Intn(6) == 0 {
		req.Filter.Keyword = words[rng.Intn(len(words))]
	}
	if rng.Intn(10) == 0 {
		req.Filter.Attrs = map[string]string{"kind": words[rng.Intn(2)]}
	}
	return req
}

// publishRequest draws a valid PUBLISH at c: expiries up to 29 s, some
// self-joins.
func publishRequest(rng *rand.Rand, uid string, c subscriptions.Cell) *subscriptions.PublishRequest {
	return &subscriptions.PublishRequest{
		Uid: uid, Cell: c, SelfJoin: rng.Intn(5) == 0,
		Expires: time.Duration(rng.Intn(30)) * time.Second,
		Desc:    words[rng.Intn(len(words))] + " near somewhere",
		Attrs:   map[string]string{"kind": words[rng.Intn(3)]},
	}
}

func (r *run) tick() {
	d := time.Duration(r.rng.Intn(400)) * time.Millisecond
	r.sc.Advance(d)
	r.oc.Advance(d)
}

func pids(ps []subscriptions.Publication) string {
	var b strings.Builder
	for i := range ps {
		b.WriteString(ps[i].Pid())
		b.WriteByte(' ')
	}
	return b.String()
}

// sids lists subscription ids newest first, the order the oracle keeps;
// stores return matches in any order.
// sids names matched subscriptions by stamp and user: a store stamps no
// two alike.
func sids(ms []subscriptions.Matched) string {
	ms = slices.Clone(ms)
	subscriptions.SortMatches(ms)
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "%d/%s ", m.Ts, m.Uid)
	}
	return b.String()
}

func sameErr(a, b error) bool {
	for _, e := range []error{subscriptions.ErrUnknownSid, subscriptions.ErrBadID, subscriptions.ErrWindow, subscriptions.ErrCell, subscriptions.ErrField, subscriptions.ErrCover, subscriptions.ErrShape} {
		if errors.Is(a, e) != errors.Is(b, e) {
			return false
		}
	}
	return (a == nil) == (b == nil)
}

// cover draws, one time in five, a circle's cover of up to MaxCover cells
// (now and then one too many, which both must refuse); otherwise nil.
func (r *run) cover() []subscriptions.Cell {
	if r.rng.Intn(5) > 0 {
		return nil
	}
	k := 1 + r.rng.Intn(1+r.rng.Intn(subscriptions.MaxCover))
	if r.rng.Intn(40) == 0 {
		k = subscriptions.MaxCover + 1
	}
	return r.circleCover(r.rng, k)
}

// circleCover draws a circle near the spots, of radius 10 m to tens of
// km, and returns a cover of k cells, padded with further cells when the
// circle needs fewer.
func (r *run) circleCover(rng *rand.Rand, k int) []subscriptions.Cell {
	lat, lng := r.near(rng)
	c, err := geo.NewCircle(lat, lng, 10*math.Exp(rng.Float64()*8))
	if err != nil {
		r.t.Fatal(err)
	}
	ids, err := c.Cover(k, r.maxDepth()-1)
	if err != nil {
		r.t.Fatal(err)
	}
	for len(ids) < k {
		lat, lng := r.near(rng)
		id, err := geo.PointCell(lat, lng, rng.Intn(r.maxDepth()))
		if err != nil {
			r.t.Fatal(err)
		}
		ids = append(ids, id)
	}
	cells := make([]subscriptions.Cell, len(ids))
	for i, id := range ids {
		cells[i] = subscriptions.Cell{NS: subscriptions.NSCell, ID: id}
	}
	rng.Shuffle(len(cells), func(i, j int) { cells[i], cells[j] = cells[j], cells[i] })
	return cells
}

func (r *run) step(i int) {
	ctx := context.Background()
	uid := r.users[r.rng.Intn(len(r.users))]
	switch p := r.rng.Intn(100); {
	case p < 40:
		req := subscribeRequest(r.rng, uid, subscriptions.Cell{})
		req.Cell, req.Cover, req.Shape = r.shaped()
		if r.rng.Intn(50) == 0 {
			req.Future = 2 * time.Minute // over the limit
		}
		got, gerr := r.store.Subscribe(ctx, req)
		want, werr := r.oracle.Subscribe(ctx, req)
		if !sameErr(gerr, werr) {
			r.t.Fatalf("op %d subscribe: store %v, oracle %v", i, gerr, werr)
		}
		if werr != nil {
			return
		}
		if got.Sub.Sid() != want.Sub.Sid() || got.Stored != want.Stored || pids(got.Past) != pids(want.Past) {
			r.t.Fatalf("op %d subscribe %s (self-join %v) at %v:\n store  %s\n oracle %s", i, want.Sub.Sid(), req.SelfJoin, req.Cell, pids(got.Past), pids(want.Past))
		}
		if want.Stored {
			r.sids = append(r.sids, want.Sub.Sid())
		}
	case p < 80:
		req := publishRequest(r.rng, uid, subscriptions.Cell{})
		req.Cell, req.Cover, req.Shape = r.shaped()
		got, gerr := r.store.Publish(ctx, req)
		want, werr := r.oracle.Publish(ctx, req)
		if !sameErr(gerr, werr) {
			r.t.Fatalf("op %d publish: store %v, oracle %v", i, gerr, werr)
		}
		if werr != nil {
			return
		}
		if got.Pub.Pid() != want.Pub.Pid() || got.Stored != want.Stored || sids(got.Matches) != sids(want.Matches) || pids(got.Recent) != pids(want.Recent) {
			r.t.Fatalf("op %d publish %s at %v:\n store  %s | %s\n oracle %s | %s", i, want.Pub.Pid(), req.Cell, sids(got.Matches), pids(got.Recent), sids(want.Matches), pids(want.Recent))
		}
	case p < 85:
		sid := "garbage"
		if len(r.sids) > 0 && r.rng.Intn(10) > 0 {
			sid = r.sids[r.rng.Intn(len(r.sids))]
		}
		gerr := r.store.Unsubscribe(ctx, sid, nil)
		werr := r.oracle.Unsubscribe(ctx, sid)
		if !sameErr(gerr, werr) {
			r.t.Fatalf("op %d unsubscribe %s: store %v, oracle %v", i, sid, gerr, werr)
		}
	case p < 88:
		r.replay(i)
	case p < 97:
		r.tick()
	case p < 98:
		if err := r.store.Backend().Flush(); err != nil {
			r.t.Fatal(err)
		}
	case p < 99:
		if r.rng.Intn(3) == 0 {
			if err := r.store.Backend().Compact(ctx); err != nil {
				r.t.Fatal(err)
			}
		}
	default:
		if r.rng.Intn(4) == 0 {
			r.reopen()
		}
	}
}

// replay asks both for a known subscription's notifications after a
// random point of its life (or the whole of it), and looks it up.
func (r *run) replay(i int) {
	ctx := context.Background()
	sid := "garbage"
	if len(r.sids) > 0 && r.rng.Intn(10) > 0 {
		sid = r.sids[r.rng.Intn(len(r.sids))]
	}
	var after int64
	if ts, _, err := subscriptions.ParseID(sid); err == nil && r.rng.Intn(2) == 0 {
		after = ts + r.rng.Int63n(int64(10*time.Second))
	}
	got, gerr := r.store.Replay(ctx, sid, after)
	want, werr := r.oracle.Replay(ctx, sid, after)
	if !sameErr(gerr, werr) {
		r.t.Fatalf("op %d replay %s: store %v, oracle %v", i, sid, gerr, werr)
	}
	if werr == nil && (got.Sub.Sid() != want.Sub.Sid() || got.Now != want.Now || pids(got.Pubs) != pids(want.Pubs)) {
		r.t.Fatalf("op %d replay %s after %d:\n store  %s\n oracle %s", i, sid, after, pids(got.Pubs), pids(want.Pubs))
	}
	gs, gerr := r.store.Lookup(ctx, sid)
	ws, werr := r.oracle.Lookup(ctx, sid)
	if !sameErr(gerr, werr) || gs.Sid() != ws.Sid() || gs.Uid != ws.Uid || gs.Tmax != ws.Tmax {
		r.t.Fatalf("op %d lookup %s: store %v %v, oracle %v %v", i, sid, gs, gerr, ws, werr)
	}
}

// newRun starts a run whose operations gather near four spots: New York,
// the antimeridian at the equator, the North Pole's neighbourhood, and a
// corner shared by cells of every level (a face's).
func newRun(t *testing.T, open Opener, seed int64, fixed bool) *run {
	r := &run{t: t, rng: rand.New(rand.NewSource(seed)), open: open, dir: t.TempDir(), fixed: fixed,
		sc: subscriptions.NewFakeClock(start), oc: subscriptions.NewFakeClock(start)}
	r.spots = [][2]float64{{40.758, -73.9855}, {0.5, 179.99}, {89.9, 30}}
	corner, _ := geo.CellBounds(dewey.ID{4})
	r.spots = append(r.spots, corner[0])
	r.cfg = listdb.Config{Limits: limits, Clock: r.sc, Now: r.sc.Peek}
	if fixed {
		r.cfg.Granularity, r.cfg.LeafDepth = listdb.Fixed, 5
	}
	r.oracle = subscriptions.NewOracle(r.oc, limits)
	for i := 0; i < 12; i++ {
		r.users = append(r.users, fmt.Sprintf("user%d", i))
	}
	r.reopen()
	return r
}

// Differential drives the store and the oracle with the same random
// operations and clock and requires identical answers.
func Differential(t *testing.T, open Opener) {
	for _, fixed := range []bool{false, true} {
		t.Run(fmt.Sprintf("fixed=%v", fixed), func(t *testing.T) {
			ops := 50000
			if fixed {
				ops = 15000
			}
			switch {
			case *long:
				ops *= 10
			case testing.Short(): // a peer store's, in make test
				ops /= 5
			}
			r := newRun(t, open, 1, fixed)
			// r.store changes on reopen: close whichever is current at the end.
			defer func() { r.store.Close() }()
			for i := 0; i < ops; i++ {
				r.step(i)
			}
		})
	}
}

// ExpiredDataIsGone checks that once everything has expired, a compaction
// leaves (almost) nothing on disk.
func ExpiredDataIsGone(t *testing.T, open Opener) {
	r := newRun(t, open, 2, false)
	// r.store changes on reopen: close whichever is current at the end.
	defer func() { r.store.Close() }()
	ctx := context.Background()
	for i := 0; i < 20000; i++ {
		c := r.cell()
		if i%2 == 0 {
			r.store.Subscribe(ctx, &subscriptions.SubscribeRequest{Uid: "u", Cell: c, Past: time.Second, Future: 20 * time.Second})
		} else {
			r.store.Publish(ctx, &subscriptions.PublishRequest{Uid: "u", Cell: c, Expires: 20 * time.Second, Desc: strings.Repeat("x", 100)})
		}
		r.sc.Advance(time.Millisecond)
	}
	size := func() uint64 {
		var n uint64
		for _, m := range r.store.Backend().Metrics() {
			n += m.DiskSize()
		}
		return n
	}
	if err := r.store.Backend().Flush(); err != nil {
		t.Fatal(err)
	}
	full := size()
	r.sc.Advance(time.Minute)
	if err := r.store.Backend().Compact(ctx); err != nil {
		t.Fatal(err)
	}
	after := size()
	if full < 256<<10 || after > full/100 {
		t.Fatalf("live bytes %d before expiry, %d after compaction: want under 1%%", full, after)
	}
	// And nothing comes back.
	res, err := r.store.Publish(ctx, &subscriptions.PublishRequest{Uid: "u", Cell: subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1}}, Expires: time.Second})
	if err != nil || len(res.Matches) != 0 {
		t.Fatalf("matches after expiry: %v %v", res, err)
	}
}

// BadInput checks that malformed requests get typed errors and store
// nothing.
func BadInput(t *testing.T, open Opener) {
	r := newRun(t, open, 3, false)
	// r.store changes on reopen: close whichever is current at the end.
	defer func() { r.store.Close() }()
	ctx := context.Background()
	cell := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1, 2}}
	long := strings.Repeat("x", 5000)
	bigCircle, _ := geo.NewCircle(0, 0, 200_000) // above the default 100 km
	smallCircle, _ := geo.NewCircle(0, 0, 10)
	ring := make([]geo.LatLng, 1100) // above the default 1,024 vertices
	for k := range ring {
		ring[k].Lat, ring[k].Lng = geotest.Destination(0, 0, 1000, 2*math.Pi*float64(k)/float64(len(ring)))
	}
	bigPolygon, err := geo.NewPolygons([]geo.Rings{{ring}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	subs := []struct {
		req  subscriptions.SubscribeRequest
		want error
	}{
		{subscriptions.SubscribeRequest{Uid: "u", Cell: cell, Past: -time.Second}, subscriptions.ErrWindow},
		{subscriptions.SubscribeRequest{Uid: "u", Cell: cell, Future: time.Hour}, subscriptions.ErrWindow},
		{subscriptions.SubscribeRequest{Uid: "u", Cell: subscriptions.Cell{NS: subscriptions.NSCell}}, subscriptions.ErrCell},
		{subscriptions.SubscribeRequest{Uid: "u", Cell: subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1, 0}}}, subscriptions.ErrCell},
		{subscriptions.SubscribeRequest{Uid: "u", Cell: subscriptions.Cell{NS: 'x', ID: dewey.ID{1}}}, subscriptions.ErrCell},
		{subscriptions.SubscribeRequest{Uid: "u", Cell: subscriptions.Cell{NS: subscriptions.NSCell, ID: make(dewey.ID, geo.MaxDepth+1)}}, subscriptions.ErrCell},
		{subscriptions.SubscribeRequest{Uid: "u", Cell: cell, Shape: bigCircle}, subscriptions.ErrShape},
		{subscriptions.SubscribeRequest{Uid: "u", Cell: subscriptions.Cell{NS: subscriptions.NSTopic, ID: dewey.ID{1}}, Shape: smallCircle}, subscriptions.ErrShape},
		{subscriptions.SubscribeRequest{Uid: "", Cell: cell}, subscriptions.ErrField},
		{subscriptions.SubscribeRequest{Uid: long, Cell: cell}, subscriptions.ErrField},
		{subscriptions.SubscribeRequest{Uid: "u\xff", Cell: cell}, subscriptions.ErrField},
		{subscriptions.SubscribeRequest{Uid: "u", Cover: make([]subscriptions.Cell, subscriptions.MaxCover+1)}, subscriptions.ErrCover},
		{subscriptions.SubscribeRequest{Uid: "u", Cover: []subscriptions.Cell{cell, {NS: subscriptions.NSCell, ID: dewey.ID{1, 0}}}}, subscriptions.ErrCell},
	}
	for i, c := range subs {
		c.req.Future += time.Second // would be stored if accepted
		if _, err := r.store.Subscribe(ctx, &c.req); !errors.Is(err, c.want) || !errors.Is(err, subscriptions.ErrBadRequest) {
			t.Fatalf("subscribe case %d: %v, want %v", i, err, c.want)
		}
	}
	pubs := []struct {
		req  subscriptions.PublishRequest
		want error
	}{
		{subscriptions.PublishRequest{Uid: "u", Cell: cell, Expires: -1}, subscriptions.ErrWindow},
		{subscriptions.PublishRequest{Uid: "u", Cell: cell, Expires: time.Hour}, subscriptions.ErrWindow},
		{subscriptions.PublishRequest{Uid: "u", Cell: subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{0}}, Expires: time.Second}, subscriptions.ErrCell},
		{subscriptions.PublishRequest{Uid: "u", Cell: cell, Expires: time.Second, Desc: long}, subscriptions.ErrField},
		{subscriptions.PublishRequest{Uid: "u", Cell: cell, Expires: time.Second, Attrs: map[string]string{"": "v"}}, subscriptions.ErrField},
		{subscriptions.PublishRequest{Uid: "u", Cover: make([]subscriptions.Cell, subscriptions.MaxCover+1), Expires: time.Second}, subscriptions.ErrCover},
		{subscriptions.PublishRequest{Uid: "u", Cell: cell, Expires: time.Second, Shape: bigCircle}, subscriptions.ErrShape},
		{subscriptions.PublishRequest{Uid: "u", Cell: cell, Expires: time.Second, Shape: bigPolygon}, subscriptions.ErrShape},
	}
	for i, c := range pubs {
		if _, err := r.store.Publish(ctx, &c.req); !errors.Is(err, c.want) {
			t.Fatalf("publish case %d: %v, want %v", i, err, c.want)
		}
	}
	// Nothing was stored: a wide subscription sees no publication and a
	// publication at the root reaches no subscription.
	res, err := r.store.Subscribe(ctx, &subscriptions.SubscribeRequest{Uid: "w", Cell: subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1}}, Past: time.Minute})
	if err != nil || len(res.Past) != 0 {
		t.Fatalf("rejected publications were stored: %v %v", res, err)
	}
	pr, err := r.store.Publish(ctx, &subscriptions.PublishRequest{Uid: "w", Cell: subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1}}, Expires: time.Second})
	if err != nil || len(pr.Matches) != 0 {
		t.Fatalf("rejected subscriptions were stored: %v %v", pr, err)
	}
	for _, sid := range []string{"", "x", "-1", "zz-1.0", "abc-", "1-t", strings.Repeat("9", 40) + "-1"} {
		if err := r.store.Unsubscribe(ctx, sid, nil); !errors.Is(err, subscriptions.ErrBadID) {
			t.Fatalf("Unsubscribe(%q): %v", sid, err)
		}
	}
	if err := r.store.Unsubscribe(ctx, subscriptions.FormatID(12345, cell), nil); !errors.Is(err, subscriptions.ErrUnknownSid) {
		t.Fatalf("unknown sid: %v", err)
	}
}

// ClockFloor checks the persisted clock floor with the default clock: every
// stored record is stamped below the floor persisted before it was written
// (so a restart never reissues a stamp), and the floor stays within a few
// seconds of the stamps (so a restart does not freeze the clock).
func ClockFloor(t *testing.T, open Opener) {
	dir := t.TempDir()
	st, err := open(dir, listdb.Config{}, SmallEngine())
	if err != nil {
		t.Fatal(err)
	}
	floor := func() int64 {
		v, err := st.Backend().Meta().Get([]byte("m/clock-floor"))
		if err != nil || len(v) != 8 {
			t.Fatalf("clock floor: %x, %v", v, err)
		}
		return int64(binary.LittleEndian.Uint64(v))
	}
	ctx := context.Background()
	cell := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1, 2}}
	var last int64
	for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		res, err := st.Publish(ctx, &subscriptions.PublishRequest{Uid: "p", Cell: cell, Expires: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if f := floor(); res.Pub.Tp >= f || f > res.Pub.Tp+int64(3*time.Second) {
			t.Fatalf("stamp %d with the floor at %+d", res.Pub.Tp, f-res.Pub.Tp)
		}
		last = res.Pub.Tp
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err = open(dir, listdb.Config{}, SmallEngine()); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	res, err := st.Publish(ctx, &subscriptions.PublishRequest{Uid: "p", Cell: cell, Expires: time.Minute})
	if err != nil || res.Pub.Tp <= last {
		t.Fatalf("after a restart: stamp %d after %d, %v", res.Pub.Tp, last, err)
	}
}

// ResumeGrace checks that an ended subscription can be replayed for
// subscriptions.ResumeGrace after its end, compaction or not, and not
// after.
func ResumeGrace(t *testing.T, open Opener) {
	r := newRun(t, open, 2, false)
	defer func() { r.store.Close() }()
	ctx := context.Background()
	c := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1, 2}}
	sub, err := r.store.Subscribe(ctx, &subscriptions.SubscribeRequest{Uid: "u", Cell: c, Future: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.store.Publish(ctx, &subscriptions.PublishRequest{Uid: "p", Cell: c, Expires: time.Minute}); err != nil {
		t.Fatal(err)
	}
	sid := sub.Sub.Sid()
	r.sc.Advance(subscriptions.ResumeGrace/2 + time.Second)
	if err := r.store.Backend().Flush(); err != nil {
		t.Fatal(err)
	}
	if err := r.store.Backend().Compact(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := r.store.Replay(ctx, sid, 0)
	if err != nil || len(res.Pubs) != 1 {
		t.Fatalf("replay just after the end: %+v, %v", res, err)
	}
	if _, err := r.store.Lookup(ctx, sid); !errors.Is(err, subscriptions.ErrUnknownSid) {
		t.Fatalf("lookup of an ended subscription: %v", err)
	}
	r.sc.Advance(subscriptions.ResumeGrace)
	if _, err := r.store.Replay(ctx, sid, 0); !errors.Is(err, subscriptions.ErrUnknownSid) {
		t.Fatalf("replay past the grace: %v", err)
	}
}
