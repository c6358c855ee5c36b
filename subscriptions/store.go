package subscriptions

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/seed84792017/cellcast/geo"
)

// SubscribeRequest asks for a subscription on Cell over [now−Past,
// now+Future].
type SubscribeRequest struct {
	Uid  string
	Cell Cell
	// Cover, when not empty, replaces Cell: the subscription lies on
	// these cells (at most MaxCover; order and repeats do not matter).
	Cover []Cell
	// Shape, when set, is where the subscription truly is; its cells
	// index it (geometry.go).
	Shape        *geo.Shape
	Past, Future time.Duration
	SelfJoin     bool
	// Prior, with SelfJoin, holds earlier subscriptions of the user that
	// live in another store (a cluster's other shards), found before
	// this request was sent: the self-join leaves out what they received
	// too. Set by the cluster between its nodes, never by a client.
	Prior  []Subscription `json:"-"`
	Filter Filter
	// A query (by place) is a subscription without a future window,
	// never stored; these narrow its past results.
	Query Narrow
	// Stamped hears that the subscribe has its stamp (Stamped's doc).
	Stamped Stamped `json:"-"`
}

// Narrow narrows a query's past results. The zero Narrow keeps them all.
type Narrow struct {
	Until     int64  // only publications stamped at or before (0: no bound)
	Publisher string // only this user's publications ("": anyone's)
	Limit     int    // at most this many, the newest (0: all)
}

// Keeps reports whether a query narrowed by n keeps p.
func (n Narrow) Keeps(p *Publication) bool {
	return (n.Until == 0 || p.Tp <= n.Until) && (n.Publisher == "" || p.Uid == n.Publisher)
}

// Cut keeps the first Limit of past results sorted newest first.
func (n Narrow) Cut(ps []Publication) []Publication {
	if n.Limit > 0 && len(ps) > n.Limit {
		return ps[:n.Limit]
	}
	return ps
}

// PublishRequest publishes at Cell, valid for Expires.
type PublishRequest struct {
	Uid      string
	Cell     Cell
	Cover    []Cell // when not empty, replaces Cell, as for SubscribeRequest
	Expires  time.Duration
	Desc     string
	Attrs    map[string]string
	SelfJoin bool
	Shape    *geo.Shape // where, for a point, a circle or a polygon; nil otherwise
	// Stamped hears that the publish has its stamp (Stamped's doc).
	Stamped Stamped `json:"-"`
}

// SubscribeResult is what SUBSCRIBE returns: the subscription as stamped,
// whether it was stored (its window reaches the future), and the stored
// publications it matches, newest first.
type SubscribeResult struct {
	Sub    Subscription
	Stored bool
	Past   []Publication
	// Rendered, when not nil, stands for Past: its publications as
	// clients receive them, in the same order. A cluster node gets the
	// past results of another node's shard so (most by reference to what
	// it keeps), and would only render them.
	Rendered [][]byte
}

// PublishResult is what PUBLISH returns: the publication as stamped,
// whether it was stored, the live subscriptions it matches (in no set
// order: a publication may match thousands, and the broker routes each on
// its own), and for a self-join publish the cell's live publications
// (newest first).
type PublishResult struct {
	Pub     Publication
	Stored  bool
	Matches []Matched
	Recent  []Publication
}

// Matched is a subscription a publication matched, as much of it as
// delivering the notification takes: the stamp that names its route, and
// its user. A publication's matches wait in memory until they are
// dispatched, thousands of them for a busy cell.
type Matched struct {
	Ts  int64
	Uid string
}

// Store is what a storage architecture provides. All methods are safe for
// concurrent use.
type Store interface {
	Subscribe(ctx context.Context, req *SubscribeRequest) (*SubscribeResult, error)
	Publish(ctx context.Context, req *PublishRequest) (*PublishResult, error)
	// Unsubscribe cancels a live subscription; ErrUnknownSid if there is
	// none with that id.
	Unsubscribe(ctx context.Context, sid string, stamped Stamped) error
	// Lookup returns the live subscription sid: ErrUnknownSid when it
	// never existed, was cancelled or has ended.
	Lookup(ctx context.Context, sid string) (Subscription, error)
	// Replay returns the subscription sid, live or ended less than
	// ResumeGrace ago, and the publications it was notified of (those
	// stamped after it that matched it when published) that are stamped
	// after `after` and have not expired, oldest first. Its stamp Now
	// bounds them: every later notification comes from a Publish stamped
	// after Now.
	Replay(ctx context.Context, sid string, after int64) (*ReplayResult, error)
	Close() error
}

// ResumeGrace is how long after its end a subscription can still be
// replayed: a client that lost its connection just before its
// subscription ended still gets what it was owed, and so does a cluster
// node that hears of the end (a few seconds after it: the hub sweeps
// ended windows each second) with a notification lost on its way.
// (Stores keep ended records at least this long.)
const ResumeGrace = 5 * time.Second

// ReplayResult is what Replay found.
type ReplayResult struct {
	Sub  Subscription
	Now  int64
	Pubs []Publication
}

// Errors for bad requests; each wraps ErrBadRequest.
var (
	ErrBadRequest = errors.New("bad request")
	ErrWindow     = fmt.Errorf("%w: window or expiry out of range", ErrBadRequest)
	ErrCell       = fmt.Errorf("%w: invalid cell", ErrBadRequest)
	ErrField      = fmt.Errorf("%w: invalid field", ErrBadRequest)
	// ErrUnknownSid: no live subscription has this id.
	ErrUnknownSid = errors.New("unknown subscription id")
)

// Limits bound requests. Zero fields take the defaults.
type Limits struct {
	MaxPast   time.Duration // default 1h
	MaxFuture time.Duration // default 1h
	MaxExpiry time.Duration // default 24h
	MaxDepth  int           // cells at most this deep; default geo.MaxDepth
	// MaxRadiusM bounds a circle's radius in metres; default 100 km.
	MaxRadiusM float64
	// MaxVertices bounds a polygon's vertices, all rings together;
	// default 1,024 (at most geo.MaxVertices).
	MaxVertices int
	MaxUid      int // bytes; default 256
	MaxDesc     int // bytes; default 4096
	MaxAttrs    int // entries; default 32
	MaxAttr     int // bytes per key or value; default 256
}

// WithDefaults fills unset fields.
func (l Limits) WithDefaults() Limits {
	if l.MaxPast == 0 {
		l.MaxPast = time.Hour
	}
	if l.MaxFuture == 0 {
		l.MaxFuture = time.Hour
	}
	if l.MaxExpiry == 0 {
		l.MaxExpiry = 24 * time.Hour
	}
	if l.MaxDepth == 0 {
		l.MaxDepth = geo.MaxDepth
	}
	if l.MaxRadiusM == 0 {
		l.MaxRadiusM = 100_000
	}
	if l.MaxVertices == 0 {
		l.MaxVertices = 1024
	}
	if l.MaxUid == 0 {
		l.MaxUid = 256
	}
	if l.MaxDesc == 0 {
		l.MaxDesc = 4096
	}
	if l.MaxAttrs == 0 {
		l.MaxAttrs = 32
	}
	if l.MaxAttr == 0 {
		l.MaxAttr = 256
	}
	return l
}

func (l Limits) checkCell(c Cell) error {
	if !c.NS.valid() {
		return fmt.Errorf("%w: namespace %q", ErrCell, c.NS)
	}
	if err := c.ID.Validate(l.MaxDepth); err != nil {
		return fmt.Errorf("%w: %w", ErrCell, err)
	}
	return nil
}

func (l Limits) checkText(field, s string, n int) error {
	if len(s) > n {
		return fmt.Errorf("%w: %s longer than %d bytes", ErrField, field, n)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s is not UTF-8", ErrField, field)
	}
	return nil
}

func (l Limits) checkAttrs(field string, attrs map[string]string) error {
	if len(attrs) > l.MaxAttrs {
		return fmt.Errorf("%w: %d %s, limit %d", ErrField, len(attrs), field, l.MaxAttrs)
	}
	for k, v := range attrs {
		if k == "" {
			return fmt.Errorf("%w: empty %s key", ErrField, field)
		}
		if err := l.checkText(field+" key", k, l.MaxAttr); err != nil {
			return err
		}
		if err := l.checkText(field+" value", v, l.MaxAttr); err != nil {
			return err
		}
	}
	return nil
}

// NewSubscription validates req and stamps it at now.
func (l Limits) NewSubscription(req *SubscribeRequest, now int64) (Subscription, error) {
	// A query (no future window) looks back as far as publications live.
	maxPast := l.MaxPast
	if req.Future == 0 {
		maxPast = max(l.MaxPast, l.MaxExpiry)
	}
	switch {
	case req.Past < 0 || req.Past > maxPast:
		return Subscription{}, fmt.Errorf("%w: past %v not in 0…%v", ErrWindow, req.Past, maxPast)
	case req.Query != (Narrow{}) && req.Future != 0:
		return Subscription{}, fmt.Errorf("%w: until, publisher and limit narrow a query, which has no future window", ErrWindow)
	case req.Query.Limit < 0:
		return Subscription{}, fmt.Errorf("%w: limit %d", ErrField, req.Query.Limit)
	case req.Future < 0 || req.Future > l.MaxFuture:
		return Subscription{}, fmt.Errorf("%w: future %v not in 0…%v", ErrWindow, req.Future, l.MaxFuture)
	}
	cell, cover, err := l.checkCover(req.Cell, req.Cover)
	if err != nil {
		return Subscription{}, err
	}
	if err := l.checkShape(req.Shape, cellList(cell, cover)); err != nil {
		return Subscription{}, err
	}
	if err := l.checkText("uid", req.Uid, l.MaxUid); err != nil {
		return Subscription{}, err
	}
	if req.Uid == "" {
		return Subscription{}, fmt.Errorf("%w: empty uid", ErrField)
	}
	if err := l.checkText("filter keyword", req.Filter.Keyword, l.MaxAttr); err != nil {
		return Subscription{}, err
	}
	if err := l.checkAttrs("filter attrs", req.Filter.Attrs); err != nil {
		return Subscription{}, err
	}
	return Subscription{
		Uid: req.Uid, Cell: cell, Cover: cover, Shape: req.Shape, Ts: now, Tmin: now - int64(req.Past), Tmax: now + int64(req.Future),
		SelfJoin: req.SelfJoin, Filter: req.Filter,
	}, nil
}

// NewPublication validates req and stamps it at now.
func (l Limits) NewPublication(req *PublishRequest, now int64) (Publication, error) {
	if req.Expires < 0 || req.Expires > l.MaxExpiry {
		return Publication{}, fmt.Errorf("%w: expiry %v not in 0…%v", ErrWindow, req.Expires, l.MaxExpiry)
	}
	cell, cover, err := l.checkCover(req.Cell, req.Cover)
	if err != nil {
		return Publication{}, err
	}
	if req.Uid == "" {
		return Publication{}, fmt.Errorf("%w: empty uid", ErrField)
	}
	if err := l.checkText("uid", req.Uid, l.MaxUid); err != nil {
		return Publication{}, err
	}
	if err := l.checkText("desc", req.Desc, l.MaxDesc); err != nil {
		return Publication{}, err
	}
	if err := l.checkAttrs("attrs", req.Attrs); err != nil {
		return Publication{}, err
	}
	if err := l.checkShape(req.Shape, cellList(cell, cover)); err != nil {
		return Publication{}, err
	}
	return Publication{Uid: req.Uid, Cell: cell, Cover: cover, Tp: now, Tmax: now + int64(req.Expires), Desc: req.Desc, Attrs: req.Attrs, Shape: req.Shape}, nil
}

// SortPublications orders newest first. It sorts stamps with their
// indexes and then moves each publication once: sorting the publications
// themselves copied two of them per comparison, an eighth of a broker's
// CPU when subscriptions return hundreds of past results. Past results
// lie within a window, so a stamp's distance from the newest and its index
// usually fit one uint64, and a sort of plain integers (no comparison
// function to call) does the work.
func SortPublications(ps []Publication) {
	if len(ps) < 2 {
		return
	}
	sorted := true
	lo, hi := ps[0].Tp, ps[0].Tp
	for i := 1; i < len(ps); i++ {
		sorted = sorted && ps[i-1].Tp >= ps[i].Tp
		lo, hi = min(lo, ps[i].Tp), max(hi, ps[i].Tp)
	}
	if sorted {
		return
	}
	from := make([]int, len(ps)) // from[j]: the index of the publication that goes to j
	if shift := uint(bits.Len(uint(len(ps)))); uint64(hi-lo) < 1<<(64-shift) {
		keys := make([]uint64, len(ps))
		for i := range ps {
			keys[i] = uint64(hi-ps[i].Tp)<<shift | uint64(i)
		}
		slices.Sort(keys)
		for j, k := range keys {
			from[j] = int(k & (1<<shift - 1))
		}
	} else {
		keys := make([]stampAt, len(ps))
		for i := range ps {
			keys[i] = stampAt{ps[i].Tp, i}
		}
		slices.SortFunc(keys, func(a, b stampAt) int { return cmp.Compare(b.tp, a.tp) })
		for j, k := range keys {
			from[j] = k.i
		}
	}
	// Place ps[from[j]] at j, cycle by cycle, marking each place done.
	for start := range from {
		if from[start] == start {
			continue
		}
		held := ps[start]
		at := start
		for {
			src := from[at]
			from[at] = at
			if src == start {
				ps[at] = held
				break
			}
			ps[at] = ps[src]
			at = src
		}
	}
}

type stampAt struct {
	tp int64
	i  int
}

// SortMatches orders newest first.
func SortMatches(ms []Matched) {
	slices.SortFunc(ms, func(a, b Matched) int { return cmp.Compare(b.Ts, a.Ts) })
}

// CheckCell validates a cell as NewSubscription and NewPublication do.
func (l Limits) CheckCell(c Cell) error { return l.checkCell(c) }

// cellList is a record's cells: its cover, or its one cell.
func cellList(cell Cell, cover *Cover) []Cell {
	if cover != nil {
		return cover.Cells
	}
	return []Cell{cell}
}
