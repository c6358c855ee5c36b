package listdb

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/lsm"
	"github.com/seed84792017/cellcast/subscriptions"
)

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
	// last is the newest write's commit (st.mu's). An operation that
	// writes nothing — a subscription without a future, a publication
	// without an expiry, a replay — may still read and report any earlier
	// write, so it waits for last before it answers: no reply shows a
	// write that is not yet durable. (The log is a prefix, and a Commit of
	// several engines notes the others' ends, so last covers them all.)
	last Commit
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
	// shallowest is the low-water mark beside deepest: per namespace the
	// depth of the shallowest cell written. A scan reads no ancestor
	// above it (S2 cells of level 10 and finer leave ten empty levels).
	shallowest [2]mark
}

// NewStore wraps a backend.
func NewStore(b Backend, cfg Config) (*Store, error) {
	if cfg.inflight == nil {
		cfg.inflight = newInflight()
	}
	st := &Store{b: b, cfg: cfg, limits: cfg.Limits.WithDefaults(), clock: cfg.Clock}
	if cfg.Granularity == Fixed && (cfg.LeafDepth < 1 || cfg.LeafDepth > 16) {
		return nil, fmt.Errorf("listdb: fixed granularity needs a leaf depth of 1 to 16")
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
	st.shallowest[0].key, st.shallowest[1].key = []byte("m/shallowest/c"), []byte("m/shallowest/t")
	for _, m := range []struct {
		*mark
		legacy int64
	}{
		{&st.deepest[0], 255}, {&st.deepest[1], 255},
		{&st.span[Pubs], int64(st.limits.MaxExpiry)}, {&st.span[Subs], int64(st.limits.MaxFuture)},
		{&st.shallowest[0], 0}, {&st.shallowest[1], 0},
	} {
		if err := m.load(b.Meta(), fresh, m.legacy); err != nil {
			return nil, err
		}
	}
	// A fresh store holds no cell: its shallowest marks start deeper than
	// any cell, and are written now, so that a store without them is one
	// written before they existed (legacy: every ancestor is read).
	if fresh {
		for i := range st.shallowest {
			if err := st.shallowest[i].set(b.Meta(), noCells); err != nil {
				return nil, err
			}
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

// Limits are the bounds the store checks requests against.
func (st *Store) Limits() subscriptions.Limits { return st.limits }

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

func cellKeyTo(dst []byte, c subscriptions.Cell) []byte {
	return c.ID.AppendEncoded(append(dst, byte(c.NS)))
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
	leaves, err := dewey.Leaves(c.ID, st.cfg.LeafDepth, 1<<20)
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
// persisted clock floor ahead of the stamps. st.mu is held. The write is
// visible at once and durable once settle(commit) returns.
func (st *Store) write(list List, keys [][]byte, frag []byte, now int64) (Commit, error) {
	appends := make([]Append, len(keys))
	for i, k := range keys {
		appends[i] = Append{List: list, Cell: k, Fragment: frag}
	}
	if err := st.reapFloor(false); err != nil {
		return Commit{}, err
	}
	if now >= st.floor.Load()-floorMargin/2 && !st.floorBusy {
		st.startFloor(now + floorMargin)
	}
	// Only a record stamped below the durable floor may be written. The
	// wait keeps st.mu, so records still reach the engine in stamp order.
	for now >= st.floor.Load() {
		if err := st.reapFloor(true); err != nil {
			return Commit{}, err
		}
		if now >= st.floor.Load() {
			st.startFloor(now + floorMargin)
		}
	}
	c, err := st.b.Append(appends)
	if err == nil {
		st.last = c
	}
	return c, err
}

// settle waits, without st.mu, until c is as durable as the store's
// Durability asks. Operations waiting at once share one write and fsync.
func (st *Store) settle(c Commit) error {
	if st.cfg.Durability == Buffered {
		return nil
	}
	if err := st.b.Wait(c, st.cfg.Durability == Synced); err != nil {
		return fmt.Errorf("listdb: making a write durable: %w", err)
	}
	return nil
}

// settleFor settles c for an operation that stored a record (stored) or
// only read (!stored). A reader goes on serving once the engine refuses
// writes: every acknowledged write is durable by then, and only the writes
// that met the failure — whose writers were told the outcome is unknown —
// may show in what it read.
func (st *Store) settleFor(c Commit, stored bool) error {
	err := st.settle(c)
	if err != nil && !stored && st.b.Err() != nil {
		return nil
	}
	return err
}

// stampAndStore takes the operation's stamp, builds its record and, if it
// outlives now, appends it to list at its cell or at each cell of its
// cover (and to the list of the user build names, if any), all under
// st.mu so records reach the
// engine in stamp order. The caller settles the commit, outside st.mu,
// before it answers; for a record not stored it is st.last. Unless it fails, the operation is in flight until the
// caller calls st.cfg.inflight.end(now). It marks stamped as it lets go
// of st.mu. A context cancelled once the
// operation began no longer stops it: what is stored must be answered for
// (and dispatched), whoever still listens.
func (st *Store) stampAndStore(ctx context.Context, list List, stamped subscriptions.Stamped, build func(now int64) (subscriptions.Cell, *subscriptions.Cover, int64, []byte, string, error)) (now int64, stored bool, c Commit, err error) {
	if err := ctx.Err(); err != nil {
		return 0, false, Commit{}, err
	}
	st.mu.Lock()
	now = st.clock.Now()
	st.cfg.inflight.begin(now)
	cell, cover, tmax, frag, uid, err := build(now)
	var keys [][]byte
	switch {
	case err != nil:
	case cover == nil:
		keys, err = st.cellsFor(cell)
	default:
		keys, err = st.keysFor(cover.Cells)
	}
	if err == nil && uid != "" {
		keys = append(keys, userKey(uid)) // for the user's later self-joins (selfjoin.go)
	}
	if err == nil && tmax > now {
		err = st.raiseMarks(list, cell, tmax-now)
	}
	if cover != nil {
		for _, c := range cover.Cells {
			if err == nil && tmax > now {
				err = st.raiseMarks(list, c, tmax-now)
			}
		}
	}
	if err == nil && tmax > now {
		c, err = st.write(list, keys, frag, now)
		stored = err == nil
	}
	if err == nil && !stored {
		c = st.last // it wrote nothing, but its reply reports what it reads
	}
	st.mu.Unlock()
	stamped.Mark()
	if err != nil {
		st.cfg.inflight.end(now)
	}
	return now, stored, c, err
}

// match is the matching rule (subscriptions.Match), or with CellsOnly its
// cells and times alone.
func (st *Store) match(p *subscriptions.Publication, s *subscriptions.Subscription, now int64) bool {
	if st.cfg.CellsOnly {
		return subscriptions.MatchCells(p, s, now)
	}
	return subscriptions.Match(p, s, now)
}
