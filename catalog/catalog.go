package catalog

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seed84792017/cellcast/geo"
	"github.com/seed84792017/cellcast/lsm"
	"github.com/seed84792017/cellcast/secondary"
	"github.com/seed84792017/cellcast/subscriptions"
)

// The built-in attributes; any other indexed name is a key of a
// publication's attrs.
const (
	AttrUID = "uid" // the publisher
	AttrTp  = "tp"  // when it was published: RFC 3339 in queries
)

// DefaultIndexes is what a broker indexes unless told otherwise:
// Composite keys for the string attributes (cheap writes, exact deletes
// when publications expire) and the Embedded zone maps for the creation
// time, which grows with the primary key and so costs no index at all.
const DefaultIndexes = "uid=composite,category=composite,tp=embedded"

// MaxK is the most results one query may ask for.
const MaxK = 1000

// Index is one indexed attribute and its strategy.
type Index struct {
	Attr     string
	Strategy secondary.Strategy
}

// Errors, each matched with errors.Is.
var (
	ErrBadIndexes = errors.New("catalog: bad index list")
	ErrBadQuery   = errors.New("catalog: bad query")
)

// ParseIndexes reads "attr=strategy,..." (empty: none).
func ParseIndexes(s string) ([]Index, error) {
	var out []Index
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		attr, strategy, ok := strings.Cut(part, "=")
		if !ok || attr == "" {
			return nil, fmt.Errorf("%w: %q: want attr=strategy", ErrBadIndexes, part)
		}
		if seen[attr] {
			return nil, fmt.Errorf("%w: %q indexed twice", ErrBadIndexes, attr)
		}
		seen[attr] = true
		out = append(out, Index{Attr: attr, Strategy: secondary.Strategy(strategy)})
	}
	return out, nil
}

// Config shapes a catalog.
type Config struct {
	Indexes []Index
	Sync    bool         // make every write durable before it returns
	Options *lsm.Options // the engines' options (nil: defaults)
	// Now is the clock expiry is judged by (nil: the wall clock in ns).
	Now func() int64
	Log *slog.Logger
	// janitorEvery is how often expired rows are deleted (0: every
	// second); a test that counts deletions sets it past its own length.
	janitorEvery time.Duration
}

// Catalog is the publications' attribute table. It is safe for
// concurrent use.
type Catalog struct {
	t       *secondary.Table
	types   map[string]secondary.Type // indexed attribute → its type
	now     func() int64
	synced  bool // Config.Sync
	log     *slog.Logger
	stop    chan struct{}
	done    chan struct{}
	closeMu sync.Once
}

// Columns of a catalogued publication. Attrs go under "a." so that no
// attribute name can clash with the built-in ones.
const (
	colUID     = AttrUID
	colTp      = AttrTp
	colExpires = "expires"
	colCell    = "cell"
	colDesc    = "desc"
	colAt      = "at"      // "lat,lng,radius_m" of a publication made at a point or a circle
	colPolygon = "polygon" // GeoJSON of a publication made at a polygon
	attrPrefix = "a."
)

// column is where an indexed attribute lives in a row.
func column(attr string) string {
	if attr == AttrUID || attr == AttrTp {
		return attr
	}
	return attrPrefix + attr
}

// Open opens (or creates) a catalog in dir.
func Open(dir string, cfg Config) (*Catalog, error) {
	c := &Catalog{types: map[string]secondary.Type{}, now: cfg.Now, synced: cfg.Sync, log: cfg.Log, stop: make(chan struct{}), done: make(chan struct{})}
	if c.now == nil {
		c.now = func() int64 { return time.Now().UnixNano() }
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	// The expiry is always indexed, for the janitor: Composite, so expired
	// rows it has deleted are gone from its scans at once.
	attrs := []secondary.Attr{{Name: colExpires, Type: secondary.Int, Strategy: secondary.Composite}}
	for _, ix := range cfg.Indexes {
		typ := secondary.String
		if ix.Attr == AttrTp {
			typ = secondary.Int
		}
		if ix.Attr == colExpires || ix.Attr == colCell || ix.Attr == colDesc || ix.Attr == colAt || ix.Attr == colPolygon || strings.HasPrefix(ix.Attr, attrPrefix) {
			return nil, fmt.Errorf("%w: %q cannot be indexed (use uid, tp or an attrs key)", ErrBadIndexes, ix.Attr)
		}
		c.types[ix.Attr] = typ
		attrs = append(attrs, secondary.Attr{Name: column(ix.Attr), Type: typ, Strategy: ix.Strategy})
	}
	t, err := secondary.Open(dir, secondary.Config{Attrs: attrs, Options: engineOptions(cfg), Sync: cfg.Sync})
	if errors.Is(err, secondary.ErrConfig) {
		return nil, fmt.Errorf("%w: %w", ErrBadIndexes, err)
	}
	if err != nil {
		return nil, err
	}
	c.t = t
	every := cfg.janitorEvery
	if every == 0 {
		every = time.Second
	}
	go c.janitor(every)
	return c, nil
}

// unsyncedFlushDelay is how long an unsynced catalog's writes wait in
// memory before they reach the OS. Reconcile rebuilds whatever a crash
// loses from the store, so the catalog trades that window for one write(2)
// per engine every 20 ms instead of one every 500µs under load.
const unsyncedFlushDelay = 20 * time.Millisecond

// engineOptions are cfg's engine options, with the unsynced flush delay
// unless cfg sets its own.
func engineOptions(cfg Config) *lsm.Options {
	var o lsm.Options
	if cfg.Options != nil {
		o = *cfg.Options
	}
	if !cfg.Sync && o.WALFlushDelay == 0 {
		o.WALFlushDelay = unsyncedFlushDelay
	}
	return &o
}

// Close stops the janitor and closes the table.
func (c *Catalog) Close() error {
	c.closeMu.Do(func() { close(c.stop) })
	<-c.done
	return c.t.Close()
}

// Indexed lists the indexed attributes, sorted.
func (c *Catalog) Indexed() []string {
	var out []string
	for a := range c.types {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

// Add catalogues a publication just stored.
func (c *Catalog) Add(p *subscriptions.Publication) error {
	doc := secondary.Doc{
		colUID:     secondary.StringValue(p.Uid),
		colTp:      secondary.IntValue(p.Tp),
		colExpires: secondary.IntValue(p.Tmax),
		colCell:    secondary.StringValue(p.Cell.String()),
	}
	if p.Desc != "" {
		doc[colDesc] = secondary.StringValue(p.Desc)
	}
	for k, v := range p.Attrs {
		doc[attrPrefix+k] = secondary.StringValue(v)
	}
	switch {
	case p.Shape == nil:
	case p.Shape.Kind() == geo.Circle:
		doc[colAt] = secondary.StringValue(formatCircle(p.Shape))
	default:
		doc[colPolygon] = secondary.StringValue(string(p.Shape.AppendGeoJSON(nil)))
	}
	return c.t.Put(p.Pid(), doc)
}

// Query asks for the latest K live publications whose attribute Attr
// equals Eq, or when Eq is nil lies in [From, To].
type Query struct {
	Attr     string
	Eq       *Value
	From, To *Value
	K        int // 1 to MaxK
}

// Value is a query value: a time for tp, a string for the other
// attributes.
type Value struct {
	s      string
	t      int64 // Unix nanoseconds
	isTime bool
}

// String is a value of a string attribute (uid, an attrs key).
func String(s string) Value { return Value{s: s} }

// Time is a value of tp. Times past what nanoseconds since 1970 can hold
// (years 1678 to 2262) are clamped to its ends: no publication is outside,
// so a query bound of 2999 still means "until the end".
func Time(t time.Time) Value {
	switch {
	case t.Before(time.Unix(0, math.MinInt64)):
		return Value{t: math.MinInt64, isTime: true}
	case t.After(time.Unix(0, math.MaxInt64)):
		return Value{t: math.MaxInt64, isTime: true}
	}
	return Value{t: t.UnixNano(), isTime: true}
}

// ParseValue reads a query value for attr: an RFC 3339 time for tp, the
// string itself otherwise.
func (c *Catalog) ParseValue(attr, s string) (Value, error) {
	typ, ok := c.types[attr]
	if !ok {
		return Value{}, c.unknown(attr)
	}
	if typ == secondary.String {
		return String(s), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return Value{}, fmt.Errorf("%w: %s %q is not an RFC 3339 time", ErrBadQuery, attr, s)
	}
	return Time(t), nil
}

// value is v as the table stores attr, or ErrBadQuery when v is of the
// other kind.
func (c *Catalog) value(attr string, v *Value) (secondary.Value, error) {
	switch typ := c.types[attr]; {
	case typ == secondary.String && !v.isTime:
		return secondary.StringValue(v.s), nil
	case typ == secondary.Int && v.isTime:
		return secondary.IntValue(v.t), nil
	}
	return secondary.Value{}, fmt.Errorf("%w: %s takes %s", ErrBadQuery, attr, map[bool]string{true: "a string", false: "a time"}[c.types[attr] == secondary.String])
}

func (c *Catalog) unknown(attr string) error {
	return fmt.Errorf("%w: attribute %q is not indexed (indexed: %s)", ErrBadQuery, attr, strings.Join(c.Indexed(), ", "))
}

// Find runs q and returns the publications newest first.
func (c *Catalog) Find(q Query) ([]subscriptions.Publication, error) {
	if _, ok := c.types[q.Attr]; !ok {
		return nil, c.unknown(q.Attr)
	}
	if q.K < 1 || q.K > MaxK {
		return nil, fmt.Errorf("%w: k must be 1 to %d, got %d", ErrBadQuery, MaxK, q.K)
	}
	if (q.Eq == nil) == (q.From == nil || q.To == nil) || (q.Eq != nil && (q.From != nil || q.To != nil)) {
		return nil, fmt.Errorf("%w: give eq, or both from and to", ErrBadQuery)
	}
	var eq, from, to secondary.Value
	var err error
	if q.Eq != nil {
		eq, err = c.value(q.Attr, q.Eq)
	} else if from, err = c.value(q.Attr, q.From); err == nil {
		to, err = c.value(q.Attr, q.To)
	}
	if err != nil {
		return nil, err
	}
	// Expired rows the janitor has not deleted yet are skipped, so ask for
	// more until k live ones are found or the index runs dry.
	now := c.now()
	for want := q.K; ; want *= 4 {
		var rows []secondary.Row
		var err error
		if q.Eq != nil {
			rows, err = c.t.Lookup(column(q.Attr), eq, want)
		} else {
			rows, err = c.t.RangeLookup(column(q.Attr), from, to, want)
		}
		if err != nil {
			return nil, queryError(err)
		}
		var out []subscriptions.Publication
		for _, r := range rows {
			p, err := publication(r)
			if err != nil {
				return nil, err
			}
			if p.Tmax > now {
				out = append(out, p)
				if len(out) == q.K {
					break
				}
			}
		}
		if len(out) == q.K || len(rows) < want || want > math.MaxInt32 {
			// The table ranks by the order publications were catalogued,
			// which is publication order but for publications made at
			// the same moment by different clients: show them by stamp.
			slices.SortFunc(out, func(a, b subscriptions.Publication) int { return cmp.Compare(b.Tp, a.Tp) })
			return out, nil
		}
	}
}

// queryError tells bad queries (the caller's fault) from failures.
func queryError(err error) error {
	for _, e := range []error{secondary.ErrType, secondary.ErrBadRange, secondary.ErrUnknownAttr, secondary.ErrBadK} {
		if errors.Is(err, e) {
			return fmt.Errorf("%w: %w", ErrBadQuery, err)
		}
	}
	return err
}

// publication rebuilds a publication from its row.
func publication(r secondary.Row) (subscriptions.Publication, error) {
	d := r.Doc
	cell, err := subscriptions.ParseCell(d[colCell].S)
	if err != nil {
		return subscriptions.Publication{}, fmt.Errorf("catalog: row %q: %w", r.Key, err)
	}
	p := subscriptions.Publication{Uid: d[colUID].S, Cell: cell, Tp: d[colTp].I, Tmax: d[colExpires].I, Desc: d[colDesc].S}
	if v, ok := d[colAt]; ok {
		if p.Shape, err = parseCircle(v.S); err != nil {
			return subscriptions.Publication{}, fmt.Errorf("catalog: row %q: %w", r.Key, err)
		}
	}
	if v, ok := d[colPolygon]; ok {
		if p.Shape, err = geo.ParseGeoJSON([]byte(v.S), 0); err != nil {
			return subscriptions.Publication{}, fmt.Errorf("catalog: row %q: %w", r.Key, err)
		}
	}
	for k, v := range d {
		if name, ok := strings.CutPrefix(k, attrPrefix); ok {
			if p.Attrs == nil {
				p.Attrs = map[string]string{}
			}
			p.Attrs[name] = v.S
		}
	}
	return p, nil
}

// janitor deletes expired publications every so often.
func (c *Catalog) janitor(every time.Duration) {
	defer close(c.done)
	t := time.NewTicker(every)
	defer t.Stop()
	from := int64(math.MinInt64)
	for n := 0; ; n++ {
		select {
		case <-c.stop:
			return
		case <-t.C:
			if n%fullSweepEvery == 0 {
				from = math.MinInt64
			}
			to := c.now()
			if _, err := c.sweep(c.stop, from, to); err != nil {
				c.log.Error("catalog: deleting expired publications", "err", err)
				continue
			}
			from = to - int64(every)
		}
	}
}

// fullSweepEvery: the janitor's every fullSweepEvery-th sweep starts at
// the lowest expiry. The others start one period before where the last
// one ended: the rows below are gone, but their tombstones stay in the
// expiry index until compactions drop them, and a sweep from the lowest
// expiry waded through them all (4% of a publication-heavy broker's CPU).
// A row catalogued after its expiry was swept past (by Reconcile after a
// crash) is never returned by a query, and the next full sweep deletes it.
const fullSweepEvery = 60

// sweepSlice is how much expiry time one lot of an incremental sweep
// covers: about a hundred rows at 5,000 publications a second, so that a
// lot holds the table's lock, which every publish's cataloguing waits
// for, a few ms. Lots of up to MaxK rows held it long enough that 0.3% of
// a publication-heavy broker's publishes waited over 25 ms.
const sweepSlice = int64(20 * time.Millisecond)

// maxSlicedSweep bounds the range swept a slice at a time: past it (the
// full sweeps, a janitor that fell behind) expire's lots cost fewer
// lookups than thousands of mostly empty slices.
const maxSlicedSweep = int64(10 * time.Second)

// sweep is expire for the janitor, an incremental sweep a sweepSlice at a
// time.
func (c *Catalog) sweep(stop <-chan struct{}, from, to int64) (int, error) {
	if from == math.MinInt64 || to-from > maxSlicedSweep {
		return c.expire(stop, from, to)
	}
	n := 0
	for lo := from; lo < to; lo += sweepSlice {
		k, err := c.expire(stop, lo, min(lo+sweepSlice, to))
		n += k
		if err != nil {
			return n, err
		}
		select {
		case <-stop:
			return n, nil
		default:
		}
	}
	return n, nil
}

// Expire deletes the publications expired by now and returns how many.
func (c *Catalog) Expire() (int, error) { return c.expire(nil, math.MinInt64, c.now()) }

// expire deletes the publications whose expiry lies in [from, to], MaxK
// at a time, each lot in one write per engine (one fsync each when
// synced, not one per publication), until none is left or stop closes:
// Close does not wait for a backlog.
func (c *Catalog) expire(stop <-chan struct{}, from, to int64) (int, error) {
	n := 0
	for {
		deleted, err := c.t.DeleteRange(colExpires, secondary.IntValue(from), secondary.IntValue(to), MaxK)
		n += deleted
		if err != nil || deleted < MaxK {
			return n, err
		}
		select {
		case <-stop:
			return n, nil
		default:
		}
	}
}

// Metrics are the table's costs (see secondary.Metrics).
func (c *Catalog) Metrics() secondary.Metrics { return c.t.Metrics() }

// formatCircle writes a circle exactly ('g', -1 round-trips a float64).
func formatCircle(c *geo.Shape) string {
	lat, lng, r := c.Circle()
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	return f(lat) + "," + f(lng) + "," + f(r)
}

func parseCircle(s string) (*geo.Shape, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return nil, fmt.Errorf("point %q: want lat,lng,radius", s)
	}
	var v [3]float64
	for i, part := range parts {
		f, err := strconv.ParseFloat(part, 64)
		if err != nil {
			return nil, fmt.Errorf("point %q: %w", s, err)
		}
		v[i] = f
	}
	return geo.NewCircle(v[0], v[1], v[2])
}
