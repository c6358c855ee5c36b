package listdb

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/lsm"
	"github.com/seed84792017/cellcast/subscriptions"
)

// List names one of a cell's two lists.
type List byte

const (
	Pubs List = 0
	Subs List = 1
)

// Lists is a set of lists.
type Lists struct{ Pubs, Subs bool }

// Append is one fragment to append to a cell's list. Cell is the cell key:
// namespace byte then the Dewey encoding.
type Append struct {
	List     List
	Cell     []byte
	Fragment []byte
}

// Backend is where the lists live.
type Backend interface {
	// Append writes the appends atomically.
	Append(appends []Append, sync bool) error
	// Visit reports the fragments of the asked lists of cell, and of every
	// cell key below subtreeEnd when that is not nil (the cell's subtree),
	// each key's newest first, honouring fn's decisions as lsm visits do.
	Visit(cell, subtreeEnd []byte, lists Lists, filters []lsm.BlockPropertyFilter, fn func(List, *lsm.Fragment) lsm.VisitDecision) error
	// Meta holds the topic registry and other metadata.
	Meta() MetaStore
	Flush() error
	Compact(ctx context.Context) error
	Metrics() []*lsm.Metrics
	Close() error
}

// MetaStore holds a store's small metadata: high-water marks, the clock
// floor, the topic registry. A Set is durable when it returns.
type MetaStore interface {
	// Get returns key's value, or an error wrapping lsm.ErrNotFound.
	Get(key []byte) ([]byte, error)
	Set(key, value []byte) error
	// Scan calls fn for each key in [lower, upper), in order.
	Scan(lower, upper []byte, fn func(key, value []byte) error) error
}

// LSMMeta keeps metadata in an lsm.DB beside the lists.
func LSMMeta(db *lsm.DB) MetaStore { return lsmMeta{db} }

type lsmMeta struct{ db *lsm.DB }

func (m lsmMeta) Get(key []byte) ([]byte, error) { return m.db.Get(key) }
func (m lsmMeta) Set(key, value []byte) error    { return m.db.Set(key, value, lsm.Sync) }

func (m lsmMeta) Scan(lower, upper []byte, fn func(key, value []byte) error) error {
	it, err := m.db.NewIter(&lsm.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			return err
		}
	}
	return it.Error()
}

// Granularity selects how hierarchy is stored.
type Granularity int

const (
	// Variable writes once at the operation's cell and reads the cell's
	// subtree range plus a point lookup per ancestor (the default).
	Variable Granularity = iota
	// Fixed expands every operation to the quad tree's leaves at
	// LeafDepth: a write per leaf and a point read per leaf. The
	// baseline of thesis Fig. 4.12–4.15; geo cells only.
	Fixed
)

// Config shapes a Store.
type Config struct {
	Limits subscriptions.Limits
	// Clock stamps operations. Default: a SystemClock kept above stamps
	// issued before a restart.
	Clock subscriptions.Clock
	// Now reads the current time for the compaction filter without taking a
	// stamp. Default: the wall clock.
	Now func() int64
	// Sync makes every write durable before the operation returns.
	Sync bool
	// Granularity, and for Fixed the Tree and LeafDepth to expand to.
	Granularity Granularity
	Tree        *dewey.QuadTree
	LeafDepth   int
	// MaxTopicDepth bounds topic paths. Default 8.
	MaxTopicDepth int

	// inflight ties the engines' expiry filter (made by DBOptions) to the
	// store's operations (NewStore): pass NewStore the Config that
	// DBOptions was called on.
	inflight *inflight
}

// inflight tracks the stamps of operations between taking their stamp and
// finishing their reads, so compaction never drops a record one of them may
// still report, however long it takes.
type inflight struct {
	mu     sync.Mutex
	active map[int64]struct{}
	oldest atomic.Int64 // math.MaxInt64 when none
}

func newInflight() *inflight {
	f := &inflight{active: map[int64]struct{}{}}
	f.oldest.Store(math.MaxInt64)
	return f
}

// begin registers an operation stamped now. Stamps are issued in
// increasing order under Store.mu, which begin runs under, so a new stamp
// never lowers the oldest unless there was none.
func (f *inflight) begin(now int64) {
	f.mu.Lock()
	f.active[now] = struct{}{}
	if len(f.active) == 1 {
		f.oldest.Store(now)
	}
	f.mu.Unlock()
}

func (f *inflight) end(now int64) {
	f.mu.Lock()
	delete(f.active, now)
	if f.oldest.Load() == now {
		oldest := int64(math.MaxInt64)
		for t := range f.active {
			oldest = min(oldest, t)
		}
		f.oldest.Store(oldest)
	}
	f.mu.Unlock()
}

func (f *inflight) oldestStamp() int64 { return f.oldest.Load() }

// A store's default memory budget, shared by its engines: memtables and
// block cache. The same total for every architecture keeps comparisons fair.
const (
	DefaultMemTableBudget = 8 << 20
	DefaultCacheBudget    = 128 << 20
)

// DBOptions returns lsm options with the list merger, the expiry filter and
// the newest-time collector, on top of base (may be nil). Unset memtable
// and cache sizes get this engine's share of the default budget among
// engines engines.
func (c *Config) DBOptions(base *lsm.Options, engines int) *lsm.Options {
	var o lsm.Options
	if base != nil {
		o = *base
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = DefaultMemTableBudget / int64(engines)
	}
	if o.BlockCacheSize == 0 && o.Cache == nil {
		o.BlockCacheSize = DefaultCacheBudget / int64(engines)
	}
	o.Merger = Merger
	if c.inflight == nil {
		c.inflight = newInflight()
	}
	o.CompactionFilter = &ExpiryFilter{Now: c.now(), InFlight: c.inflight.oldestStamp}
	o.BlockPropertyCollectors = append(o.BlockPropertyCollectors, NewTimesCollector)
	o.FilterPrefixes = CellPrefixes
	return &o
}

// Filter entries for subtree scans. A scan of a cell's subtree reads the
// cell's own lists with point lookups (full-key bloom filters) and its
// descendants with a range visit gated by DescendantsPrefix: for every key,
// each proper ancestor cell a is added as a‖0xFE (and, for keys ending in a
// list flag, a‖0xFE‖flag). 0xFE never begins a component, so no entry is a
// prefix of a real key.
const descMarker = 0xFE

// DescendantsPrefix is the filter entry present in a table holding any key
// strictly under cell (of list l, when flagged).
func DescendantsPrefix(cell []byte, flagged bool, l List) []byte {
	out := append(append(make([]byte, 0, len(cell)+2), cell...), descMarker)
	if flagged {
		out = append(out, byte(l))
	}
	return out
}

// CellPrefixes adds the descendant markers of a TwoDB list key.
func CellPrefixes(key []byte, add func([]byte)) { cellPrefixes(key, false, add) }

// FlaggedCellPrefixes adds the descendant markers of a DualDB list key, per
// list, and the key's cell itself, so reading both lists of one cell in one
// pass can skip tables holding neither.
func FlaggedCellPrefixes(key []byte, add func([]byte)) {
	if len(key) >= 2 {
		add(key[:len(key)-1])
	}
	cellPrefixes(key, true, add)
}

func cellPrefixes(key []byte, flagged bool, add func([]byte)) {
	if len(key) < 2 || (key[0] != byte(subscriptions.NSCell) && key[0] != byte(subscriptions.NSTopic)) {
		return
	}
	var ends []int
	dewey.PrefixEnds(key[1:], func(end int) { ends = append(ends, 1+end) })
	var buf []byte
	for _, e := range ends[:max(len(ends)-1, 0)] { // proper ancestors only
		buf = append(append(buf[:0], key[:e]...), descMarker)
		add(buf)
		if flagged {
			add(append(buf, key[len(key)-1]))
		}
	}
}

func (c *Config) now() func() int64 {
	if c.Now != nil {
		return c.Now
	}
	return func() int64 { return time.Now().UnixNano() }
}

// Store implements subscriptions.Store over a Backend.
type Store struct {
	b      Backend
	cfg    Config
	limits subscriptions.Limits
	clock  subscriptions.Clock
	topics *dewey.Topics

	// mu orders writes by stamp: a stamp is taken and its record written
	// before the next stamp is issued, so an operation's read sees every
	// record stamped before it. Each pair (P, S) is then reported by the
	// later of the two only.
	mu    sync.Mutex
	floor atomic.Int64 // stamps below this were persisted as possibly issued
	// A floor write runs in the background, started half a margin before
	// the stamps reach the floor, so writers rarely wait for its fsync.
	// floorDone closes when the write in flight (floorBusy) ends; the
	// fields are st.mu's, floorErr is set before floorDone closes.
	floorBusy bool
	floorDone chan struct{}
	floorErr  error

	// High-water marks of what was ever written, which bound scans: per
	// namespace the deepest cell (a scan at that depth has no descendants
	// to range over: a grid, quad-tree leaves), and per list the longest
	// lifetime Tmax − stamp (records stamped longer ago than that are
	// expired, so a scan stops there: thesis Algorithm 1 with the
	// store's real windows instead of the configured limits).
	deepest [2]mark
	span    [2]mark
}

func nsIndex(ns subscriptions.Namespace) int {
	if ns == subscriptions.NSTopic {
		return 1
	}
	return 0
}

// A mark is a persisted high-water mark. It is raised, and synced, under
// st.mu before the write that needs it; scans read it after taking their
// stamp, so they see every raise made for an operation stamped earlier.
type mark struct {
	key []byte
	v   atomic.Int64
}

// load reads the mark; a store written before marks existed gets legacy.
func (m *mark) load(db MetaStore, fresh bool, legacy int64) error {
	v, err := db.Get(m.key)
	switch {
	case err == nil && len(v) == 8:
		m.v.Store(int64(binary.LittleEndian.Uint64(v)))
	case err == nil:
		return fmt.Errorf("listdb: %s holds %d bytes, want 8", m.key, len(v))
	case !errors.Is(err, lsm.ErrNotFound):
		return fmt.Errorf("listdb: reading %s: %w", m.key, err)
	case !fresh:
		m.v.Store(legacy)
	}
	return nil
}

func (m *mark) raise(db MetaStore, v int64) error {
	if v <= m.v.Load() {
		return nil
	}
	if err := db.Set(m.key, binary.LittleEndian.AppendUint64(nil, uint64(v))); err != nil {
		return err
	}
	m.v.Store(v)
	return nil
}

// Meta keys live in their own namespaces: 'r' topic registry, 'm' metadata.
var clockFloorKey = []byte("m/clock-floor")

// floorMargin is how far the persisted floor runs ahead of the stamps. A
// restart resumes stamping at the floor, so a large margin would freeze
// the clock (stamps 1 ns apart) until the wall clock caught up; a small
// one costs a synced write of the floor about twice per margin.
const floorMargin = int64(2 * time.Second)

// NewStore wraps a backend.
func NewStore(b Backend, cfg Config) (*Store, error) {
	if cfg.inflight == nil {
		cfg.inflight = newInflight()
	}
	st := &Store{b: b, cfg: cfg, limits: cfg.Limits.WithDefaults(), clock: cfg.Clock}
	if cfg.Granularity == Fixed && (cfg.Tree == nil || cfg.LeafDepth < 1 || cfg.LeafDepth > cfg.Tree.MaxDepth()) {
		return nil, fmt.Errorf("listdb: fixed granularity needs a quad tree and a leaf depth within it")
	}
	v, err := b.Meta().Get(clockFloorKey)
	switch {
	case err == nil && len(v) == 8:
		st.floor.Store(int64(binary.LittleEndian.Uint64(v)))
	case err != nil && !errors.Is(err, lsm.ErrNotFound):
		return nil, err
	}
	fresh := errors.Is(err, lsm.ErrNotFound) // nothing was ever written
	st.deepest[0].key, st.deepest[1].key = []byte("m/deepest/c"), []byte("m/deepest/t")
	st.span[Pubs].key, st.span[Subs].key = []byte("m/span/pubs"), []byte("m/span/subs")
	for _, m := range []struct {
		*mark
		legacy int64
	}{
		{&st.deepest[0], 255}, {&st.deepest[1], 255},
		{&st.span[Pubs], int64(st.limits.MaxExpiry)}, {&st.span[Subs], int64(st.limits.MaxFuture)},
	} {
		if err := m.load(b.Meta(), fresh, m.legacy); err != nil {
			return nil, err
		}
	}
	if st.clock == nil {
		sc := &subscriptions.SystemClock{}
		sc.AtLeast(st.floor.Load())
		st.clock = sc
	}
	depth := cfg.MaxTopicDepth
	if depth == 0 {
		depth = 8
	}
	if st.topics, err = dewey.NewTopics(topicStore{b.Meta()}, depth); err != nil {
		return nil, err
	}
	return st, nil
}

// Clock is the clock that stamps the store's operations.
func (st *Store) Clock() subscriptions.Clock { return st.clock }

// Topics is the topic registry, persisted in the store.
func (st *Store) Topics() *dewey.Topics { return st.topics }

// Backend returns the backend, for maintenance and metrics.
func (st *Store) Backend() Backend { return st.b }

// Close closes the backend.
func (st *Store) Close() error {
	st.mu.Lock()
	st.reapFloor(true) // the engine must outlive the floor write
	st.mu.Unlock()
	return st.b.Close()
}

func cellKey(c subscriptions.Cell) []byte {
	return c.ID.AppendEncoded([]byte{byte(c.NS)})
}

// cellsFor returns the keys an operation at c writes to: c itself, or its
// leaves under fixed granularity.
func (st *Store) cellsFor(c subscriptions.Cell) ([][]byte, error) {
	if st.cfg.Granularity == Variable {
		return [][]byte{cellKey(c)}, nil
	}
	if c.NS != subscriptions.NSCell {
		return nil, fmt.Errorf("%w: fixed granularity stores geo cells only", subscriptions.ErrCell)
	}
	if len(c.ID) > st.cfg.LeafDepth {
		return nil, fmt.Errorf("%w: cell %v deeper than the leaf depth %d", subscriptions.ErrCell, c.ID, st.cfg.LeafDepth)
	}
	leaves, err := st.cfg.Tree.Leaves(c.ID, st.cfg.LeafDepth, 1<<20)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", subscriptions.ErrCell, err)
	}
	keys := make([][]byte, len(leaves))
	for i, l := range leaves {
		keys[i] = cellKey(subscriptions.Cell{NS: c.NS, ID: l})
	}
	return keys, nil
}

// write appends one fragment to a list of every key, and keeps the
// persisted clock floor ahead of the stamps. st.mu is held.
func (st *Store) write(list List, keys [][]byte, frag []byte, now int64) error {
	appends := make([]Append, len(keys))
	for i, k := range keys {
		appends[i] = Append{List: list, Cell: k, Fragment: frag}
	}
	if err := st.reapFloor(false); err != nil {
		return err
	}
	if now >= st.floor.Load()-floorMargin/2 && !st.floorBusy {
		st.startFloor(now + floorMargin)
	}
	// Only a record stamped below the durable floor may be written. The
	// wait keeps st.mu, so records still reach the engine in stamp order.
	for now >= st.floor.Load() {
		if err := st.reapFloor(true); err != nil {
			return err
		}
		if now >= st.floor.Load() {
			st.startFloor(now + floorMargin)
		}
	}
	return st.b.Append(appends, st.cfg.Sync)
}

// raiseMarks records, before the write, the depth of the cells an
// operation at c writes to and the lifetime of its record, rounded up to
// whole seconds so marks rarely move. st.mu is held.
func (st *Store) raiseMarks(list List, c subscriptions.Cell, lifetime int64) error {
	depth := len(c.ID)
	if st.cfg.Granularity == Fixed {
		depth = st.cfg.LeafDepth
	}
	if err := st.deepest[nsIndex(c.NS)].raise(st.b.Meta(), int64(depth)); err != nil {
		return err
	}
	sec := int64(time.Second)
	return st.span[list].raise(st.b.Meta(), (lifetime+sec-1)/sec*sec)
}

// startFloor persists floor in the background. st.mu is held.
func (st *Store) startFloor(floor int64) {
	st.floorBusy = true
	done := make(chan struct{})
	st.floorDone = done
	go func() {
		b := binary.LittleEndian.AppendUint64(nil, uint64(floor))
		if err := st.b.Meta().Set(clockFloorKey, b); err != nil {
			st.floorErr = fmt.Errorf("listdb: persisting the clock floor: %w", err)
		} else {
			st.floor.Store(floor)
		}
		close(done)
	}()
}

// reapFloor notes the end of the floor write in flight, waiting for it if
// wait is set, and returns its error. st.mu is held.
func (st *Store) reapFloor(wait bool) error {
	if st.floorBusy {
		if wait {
			<-st.floorDone
		}
		select {
		case <-st.floorDone:
			st.floorBusy = false
		default:
		}
	}
	if !st.floorBusy && st.floorErr != nil {
		return st.floorErr
	}
	return nil
}

// oldest is the stamp below which no record of list is live at now.
func (st *Store) oldest(list List, now int64) int64 { return now - st.span[list].v.Load() }

// scan visits the lists that an operation at c, stamped now, must read: the
// subtree and the ancestors (variable), or the leaves (fixed). bounds give,
// per list, the oldest record time that can still matter: a fragment whose
// newest record is older ends its key's descent (thesis Algorithm 1).
// Tables and blocks with nothing that new, or nothing live at now, are
// skipped unread.
func (st *Store) scan(c subscriptions.Cell, lists Lists, now, pubBound, subBound int64, fn func(List, *Rec) error) error {
	bound := func(l List) int64 {
		if l == Pubs {
			return pubBound
		}
		return subBound
	}
	lowest := subBound
	if lists.Pubs && (!lists.Subs || pubBound < subBound) {
		lowest = pubBound
	}
	filters := []lsm.BlockPropertyFilter{timeFilter{newerThan: lowest, liveAt: now}}
	var ferr error
	visit := func(l List, f *lsm.Fragment) lsm.VisitDecision {
		b := bound(l)
		h, err := readHeader(f.Value)
		if err != nil {
			ferr = fmt.Errorf("list of cell %x: %w", f.Key, err)
			return lsm.VisitStop
		}
		if h.newest < b {
			return lsm.VisitSkipKey
		}
		old := false
		err = forEach(f.Value, func(r *Rec) bool {
			if r.T < b {
				old = true
				return false
			}
			if err := fn(l, r); err != nil {
				ferr = err
				return false
			}
			return true
		})
		switch {
		case err != nil:
			ferr = fmt.Errorf("list of cell %x: %w", f.Key, err)
			return lsm.VisitStop
		case ferr != nil:
			return lsm.VisitStop
		case old:
			return lsm.VisitSkipKey
		}
		return lsm.VisitContinue
	}
	run := func(key, subtreeEnd []byte) error {
		if err := st.b.Visit(key, subtreeEnd, lists, filters, visit); err != nil {
			return err
		}
		return ferr
	}
	if st.cfg.Granularity == Fixed {
		keys, err := st.cellsFor(c)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := run(k, nil); err != nil {
				return err
			}
		}
		return nil
	}
	var subtreeEnd []byte
	if int64(len(c.ID)) < st.deepest[nsIndex(c.NS)].v.Load() {
		subtreeEnd = append([]byte{byte(c.NS)}, c.ID.SubtreeEnd()...)
	}
	if err := run(cellKey(c), subtreeEnd); err != nil {
		return err
	}
	for _, a := range c.ID.Ancestors() {
		if err := run(cellKey(subscriptions.Cell{NS: c.NS, ID: a}), nil); err != nil {
			return err
		}
	}
	return nil
}

// stampAndStore takes the operation's stamp, builds its record and, if it
// outlives now, appends it to list, all under st.mu so records reach the
// engine in stamp order. Unless it fails, the operation is in flight until
// the caller calls st.cfg.inflight.end(now).
func (st *Store) stampAndStore(ctx context.Context, list List, build func(now int64) (subscriptions.Cell, int64, []byte, error)) (now int64, stored bool, err error) {
	st.mu.Lock()
	now = st.clock.Now()
	st.cfg.inflight.begin(now)
	cell, tmax, frag, err := build(now)
	var keys [][]byte
	if err == nil {
		keys, err = st.cellsFor(cell)
	}
	if err == nil && tmax > now {
		err = st.raiseMarks(list, cell, tmax-now)
	}
	if err == nil && tmax > now {
		err = st.write(list, keys, frag, now)
		stored = err == nil
	}
	st.mu.Unlock()
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		st.cfg.inflight.end(now)
	}
	return now, stored, err
}

// scanState is what one operation's scan remembers: cancels seen so far
// (each cancel is newer than its subscription, so it comes first) and,
// under fixed granularity, records already taken from another leaf. Both
// maps stay nil until needed; reading a nil map is fine.
type scanState struct {
	seen, cancelled map[int64]bool
}

func (st *Store) newScanState() *scanState {
	sc := &scanState{}
	if st.cfg.Granularity == Fixed {
		sc.seen = map[int64]bool{}
	}
	return sc
}

// skip reports records an operation stamped now ignores: stamped at or
// after it (that operation reports the pair itself), expired, or taken.
func (sc *scanState) skip(r *Rec, now int64) bool {
	return r.T >= now || r.Tmax < now || sc.seen[r.T]
}

func (sc *scanState) cancel(ts int64) {
	if sc.cancelled == nil {
		sc.cancelled = map[int64]bool{}
	}
	sc.cancelled[ts] = true
}

func (sc *scanState) mark(t int64) {
	if sc.seen != nil {
		sc.seen[t] = true
	}
}

// Subscribe implements subscriptions.Store.
func (st *Store) Subscribe(ctx context.Context, req *subscriptions.SubscribeRequest) (*subscriptions.SubscribeResult, error) {
	var s subscriptions.Subscription
	now, stored, err := st.stampAndStore(ctx, Subs, func(now int64) (subscriptions.Cell, int64, []byte, error) {
		var err error
		s, err = st.limits.NewSubscription(req, now)
		return s.Cell, s.Tmax, EncodeSubscription(&s), err
	})
	if err != nil {
		return nil, err
	}
	defer st.cfg.inflight.end(now)
	res := &subscriptions.SubscribeResult{Sub: s, Stored: stored}
	sc := st.newScanState()
	var prior []*subscriptions.Subscription
	pubBound := max(s.Tmin, st.oldest(Pubs, now))
	err = st.scan(s.Cell, Lists{Pubs: true, Subs: s.SelfJoin}, now, pubBound, st.oldest(Subs, now), func(l List, r *Rec) error {
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
			if subscriptions.Match(&p, &s, now) {
				res.Past = append(res.Past, p)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if s.SelfJoin {
		kept := res.Past[:0]
		for i := range res.Past {
			if !subscriptions.SelfJoinSeen(&res.Past[i], &s, prior) {
				kept = append(kept, res.Past[i])
			}
		}
		res.Past = kept
	}
	subscriptions.SortPublications(res.Past)
	return res, nil
}

// Publish implements subscriptions.Store.
func (st *Store) Publish(ctx context.Context, req *subscriptions.PublishRequest) (*subscriptions.PublishResult, error) {
	var p subscriptions.Publication
	now, stored, err := st.stampAndStore(ctx, Pubs, func(now int64) (subscriptions.Cell, int64, []byte, error) {
		var err error
		p, err = st.limits.NewPublication(req, now)
		return p.Cell, p.Tmax, EncodePublication(&p), err
	})
	if err != nil {
		return nil, err
	}
	defer st.cfg.inflight.end(now)
	res := &subscriptions.PublishResult{Pub: p, Stored: stored}
	sc := st.newScanState()
	err = st.scan(p.Cell, Lists{Subs: true, Pubs: req.SelfJoin}, now, st.oldest(Pubs, now), st.oldest(Subs, now), func(l List, r *Rec) error {
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
			if subscriptions.Match(&p, &s, now) {
				res.Matches = append(res.Matches, s)
			}
		case l == Pubs && r.Kind == KindPublication:
			q, err := r.Publication()
			if err != nil {
				return err
			}
			sc.mark(r.T)
			if q.Cell.Overlaps(p.Cell) {
				res.Recent = append(res.Recent, q)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	subscriptions.SortPublications(res.Recent)
	return res, nil
}

// Unsubscribe implements subscriptions.Store.
func (st *Store) Unsubscribe(ctx context.Context, sid string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	now := st.clock.Now()
	st.cfg.inflight.begin(now)
	defer st.cfg.inflight.end(now)
	found, keys, err := st.find(sid, now)
	if err != nil {
		return err
	}
	return st.write(Subs, keys, EncodeCancel(now, found.Ts, found.Tmax), now)
}

// find returns the subscription sid if it is uncancelled and live at
// liveAt, and the keys it is stored under.
func (st *Store) find(sid string, liveAt int64) (subscriptions.Subscription, [][]byte, error) {
	var s subscriptions.Subscription
	ts, cell, err := subscriptions.ParseID(sid)
	if err != nil {
		return s, nil, err
	}
	if err := st.limits.CheckCell(cell); err != nil {
		return s, nil, fmt.Errorf("%w: %w", subscriptions.ErrBadID, err)
	}
	keys, err := st.cellsFor(cell)
	if err != nil {
		return s, nil, err
	}
	var found *Rec
	cancelled := false
	var ferr error
	// A cancel is newer than its subscription, so it comes first.
	err = st.b.Visit(keys[0], nil, Lists{Subs: true}, nil, func(_ List, f *lsm.Fragment) lsm.VisitDecision {
		ferr = forEach(f.Value, func(r *Rec) bool {
			switch {
			case r.Kind == KindCancel && r.Aux == ts:
				cancelled = true
			case r.Kind == KindSubscription && r.T == ts:
				rc := *r
				found = &rc
				return false
			}
			return true
		})
		if ferr != nil || found != nil || cancelled {
			return lsm.VisitStop
		}
		return lsm.VisitContinue
	})
	if err == nil {
		err = ferr
	}
	if err != nil {
		return s, nil, err
	}
	if found == nil || cancelled || found.Tmax < liveAt {
		return s, nil, fmt.Errorf("%w: %s", subscriptions.ErrUnknownSid, sid)
	}
	s, err = found.Subscription()
	return s, keys, err
}

// stamp takes a stamp for a read-only operation, which is in flight until
// the caller calls st.cfg.inflight.end. Taking it under st.mu means every
// record stamped earlier has been written.
func (st *Store) stamp() int64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	now := st.clock.Now()
	st.cfg.inflight.begin(now)
	return now
}

// Lookup implements subscriptions.Store.
func (st *Store) Lookup(ctx context.Context, sid string) (subscriptions.Subscription, error) {
	now := st.stamp()
	defer st.cfg.inflight.end(now)
	s, _, err := st.find(sid, now)
	return s, err
}

// Replay implements subscriptions.Store.
func (st *Store) Replay(ctx context.Context, sid string, after int64) (*subscriptions.ReplayResult, error) {
	now := st.stamp()
	defer st.cfg.inflight.end(now)
	s, _, err := st.find(sid, now-int64(subscriptions.ResumeGrace))
	if err != nil {
		return nil, err
	}
	res := &subscriptions.ReplayResult{Sub: s, Now: now}
	sc := st.newScanState()
	bound := max(s.Tmin, s.Ts, after, st.oldest(Pubs, now))
	err = st.scan(s.Cell, Lists{Pubs: true}, now, bound, now, func(l List, r *Rec) error {
		if sc.skip(r, now) || r.Kind != KindPublication || r.T <= after {
			return nil
		}
		p, err := r.Publication()
		if err != nil {
			return err
		}
		sc.mark(r.T)
		if subscriptions.Notified(&p, &s, now) {
			res.Pubs = append(res.Pubs, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	subscriptions.SortPublications(res.Pubs)
	slices.Reverse(res.Pubs)
	return res, ctx.Err()
}

// topicStore keeps the topic registry under 'r' + path.
type topicStore struct{ db MetaStore }

func (t topicStore) LoadTopics(fn func(string, dewey.ID) error) error {
	return t.db.Scan([]byte("r/"), []byte("r0"), func(k, v []byte) error {
		id, err := dewey.Decode(v)
		if err != nil {
			return fmt.Errorf("topic %q: %w", k[2:], err)
		}
		return fn(string(k[2:]), id)
	})
}

func (t topicStore) SaveTopic(path string, id dewey.ID) error {
	return t.db.Set(append([]byte("r/"), path...), id.Encode())
}
