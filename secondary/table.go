package secondary

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/seed84792017/cellcast/lsm"
	"github.com/seed84792017/cellcast/lsm/sstable"
)

// Strategy is how an attribute is indexed.
type Strategy string

const (
	Embedded  Strategy = "embedded"
	Eager     Strategy = "eager"
	Lazy      Strategy = "lazy"
	Composite Strategy = "composite"
	DELI      Strategy = "deli"
	// BloomHierarchy answers Lookup from a tree of per-table bloom filters
	// and RangeLookup from zone maps, with no index of its own (bfh.go).
	BloomHierarchy Strategy = "bloom-hierarchy"
)

// Attr declares an indexed attribute.
type Attr struct {
	Name     string
	Type     Type
	Strategy Strategy
}

// Config shapes a table.
type Config struct {
	Attrs []Attr
	// Options tunes every engine of the table (nil: the defaults). They
	// share one block cache: Options.Cache, or one of BlockCacheSize.
	Options *lsm.Options
	// Sync makes every write durable before it returns.
	Sync bool
}

// Doc is a row's attributes.
type Doc map[string]Value

// Row is a row as a lookup returns it.
type Row struct {
	Key string
	Seq uint64 // the write that made this version; larger is newer
	Doc Doc
}

// Errors. Each names what was wrong in its message.
var (
	ErrConfig      = errors.New("secondary: bad config")
	ErrNotFound    = errors.New("secondary: no such row")
	ErrBadKey      = errors.New("secondary: empty primary key")
	ErrUnknownAttr = errors.New("secondary: unknown attribute")
	ErrType        = errors.New("secondary: type mismatch")
	ErrBadRange    = errors.New("secondary: empty range: want a < b")
	ErrBadK        = errors.New("secondary: K must be zero (no limit) or more")
)

// Table is a primary table and its indexes. It is safe for concurrent
// use; writes are serialized.
type Table struct {
	mu      sync.Mutex
	cfg     Config
	primary *lsm.DB
	seq     uint64
	indexes map[string]*index
	eager   bool // some attribute is Eager: writes need the replaced row
	// deli lists the DELI indexes once all are open, for the primary
	// table's compaction to repair (see deli.go).
	deli     atomic.Pointer[[]*index]
	repaired atomic.Uint64 // stale DELI entries deleted
	// Candidates validated by the iterator's filters alone (GetLite), and
	// by a Get of the row; tables an Embedded scan did not read.
	liteChecks, getChecks, tablesSkipped atomic.Uint64
}

// index is one attribute's index: a stand-alone engine, or for Embedded
// none (its summaries live in the primary table).
type index struct {
	Attr
	db  *lsm.DB
	bfh *bfhState // BloomHierarchy
	mem *memIndex // Embedded and BloomHierarchy: the memtable's rows
}

var seqKey = []byte("m/seq") // the last sequence number, beside the rows

// defaultCacheSize is the block cache a table's engines share when the
// options name none.
const defaultCacheSize = 8 << 20

func rowKey(pk string) []byte { return append([]byte("r/"), pk...) }

// Open opens (or creates) a table in dir: the primary table in
// dir/primary, each index in dir/index-<name>.
func Open(dir string, cfg Config) (*Table, error) {
	seen := map[string]bool{}
	for _, a := range cfg.Attrs {
		switch {
		case a.Name == "" || seen[a.Name] || filepath.Base(a.Name) != a.Name || a.Name == "." || a.Name == "..":
			return nil, fmt.Errorf("%w: attribute name %q empty, repeated or not a plain file name", ErrConfig, a.Name)
		case a.Type != Int && a.Type != String:
			return nil, fmt.Errorf("%w: attribute %q has type %v", ErrConfig, a.Name, a.Type)
		case !slices.Contains([]Strategy{Embedded, Eager, Lazy, Composite, DELI, BloomHierarchy}, a.Strategy):
			return nil, fmt.Errorf("%w: attribute %q has strategy %q (want embedded, eager, lazy, composite, deli or bloom-hierarchy)", ErrConfig, a.Name, a.Strategy)
		}
		seen[a.Name] = true
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	t := &Table{cfg: cfg, indexes: map[string]*index{}}
	var io lsm.Options // the indexes'
	if cfg.Options != nil {
		io = *cfg.Options
	}
	// One block cache for the primary table and every index, so a table
	// with many indexes takes one budget.
	if io.Cache == nil {
		io.Cache = sstable.NewCache(cmp.Or(io.BlockCacheSize, defaultCacheSize))
	}
	po := io // the primary table's
	po.BlockPropertyCollectors = slices.Clone(po.BlockPropertyCollectors)
	for _, a := range cfg.Attrs {
		switch a.Strategy {
		case Embedded:
			po.BlockPropertyCollectors = append(po.BlockPropertyCollectors, func() lsm.BlockPropertyCollector { return newZoneBloom(a.Name) })
		case BloomHierarchy:
			po.BlockPropertyCollectors = append(po.BlockPropertyCollectors, func() lsm.BlockPropertyCollector { return hierarchyCollector(a.Name) })
		}
	}
	po.OnShadowed = t.shadowed
	po.KeepSeqNums = true // embedded lookups order rows by SeqNum and skip tables by LargestSeq
	var err error
	if t.primary, err = lsm.Open(filepath.Join(dir, "primary"), &po); err != nil {
		return nil, err
	}
	if v, err := t.primary.Get(seqKey); err == nil && len(v) == 8 {
		t.seq = binary.LittleEndian.Uint64(v)
	} else if err != nil && !errors.Is(err, lsm.ErrNotFound) {
		t.Close()
		return nil, err
	}
	for _, a := range cfg.Attrs {
		if a.Strategy == Embedded || a.Strategy == BloomHierarchy {
			t.indexes[a.Name] = &index{Attr: a, bfh: &bfhState{}, mem: newMemIndex()}
			continue
		}
		t.eager = t.eager || a.Strategy == Eager
		db, err := lsm.Open(filepath.Join(dir, "index-"+a.Name), &io)
		if err != nil {
			t.Close()
			return nil, err
		}
		t.indexes[a.Name] = &index{Attr: a, db: db}
	}
	var deli []*index
	for _, ix := range t.indexes {
		if ix.Strategy == DELI {
			deli = append(deli, ix)
		}
	}
	t.deli.Store(&deli)
	return t, nil
}

// Close closes every engine.
func (t *Table) Close() error {
	t.deli.Store(nil)
	var errs []error
	if t.primary != nil {
		errs = append(errs, t.primary.Close())
	}
	for _, ix := range t.indexes {
		if ix.db != nil {
			errs = append(errs, ix.db.Close())
		}
	}
	return errors.Join(errs...)
}

func (t *Table) writeOptions() *lsm.WriteOptions { return &lsm.WriteOptions{Sync: t.cfg.Sync} }

// check refuses a doc whose indexed attributes have the wrong type.
// Attributes that are not indexed are stored as they are.
func (t *Table) check(doc Doc) error {
	for name, v := range doc {
		if v.Type != Int && v.Type != String {
			return fmt.Errorf("%w: attribute %q has type %v", ErrType, name, v.Type)
		}
		if ix := t.indexes[name]; ix != nil && ix.Type != v.Type {
			return fmt.Errorf("%w: attribute %q is %v, got %v", ErrType, name, ix.Type, v.Type)
		}
	}
	return nil
}

// Put writes doc under pk, replacing any earlier version. Index entries
// go first and the row last, so a crash between them leaves only entries
// that validation rejects.
func (t *Table) Put(pk string, doc Doc) error {
	if pk == "" {
		return ErrBadKey
	}
	if err := t.check(doc); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	// Only Eager lists need the replaced version; the other strategies
	// write without reading.
	var old *Row
	if t.eager {
		var err error
		if old, err = t.get(pk); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	seq := t.seq + 1
	for _, ix := range t.indexes {
		if v, ok := doc[ix.Name]; ok && ix.db != nil {
			if err := ix.add(v, posting{seq, pk}, t.writeOptions()); err != nil {
				return err
			}
		}
	}
	lsmSeq, err := t.writeRow(pk, seq, doc)
	if err != nil {
		return err
	}
	t.seq = seq
	if err := t.fileInMemory(lsmSeq, doc, posting{seq, pk}); err != nil {
		return err
	}
	return t.dropOld(old, pk)
}

// dropOld takes a replaced version out of the Eager lists, the only index
// whose lists are rewritten on every write; elsewhere validation skips it
// (and DELI's repairs remove it).
func (t *Table) dropOld(old *Row, pk string) error {
	if old == nil {
		return nil
	}
	for _, ix := range t.indexes {
		if v, ok := old.Doc[ix.Name]; ok && ix.Strategy == Eager {
			if err := ix.remove(v, posting{old.Seq, pk}, t.writeOptions()); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeRow writes a row and returns the lsm sequence number of the write.
func (t *Table) writeRow(pk string, seq uint64, doc Doc) (uint64, error) {
	b := lsm.NewBatch()
	b.Set(rowKey(pk), appendDoc(nil, seq, doc))
	b.Set(seqKey, binary.LittleEndian.AppendUint64(nil, seq))
	if err := t.primary.Apply(b, t.writeOptions()); err != nil {
		return 0, err
	}
	return b.SeqNum(), nil
}

// pruneEvery is how many writes go between looks at what flushes have
// put in tables: entries left a little longer cost only duplicates.
const pruneEvery = 512

// fileInMemory adds a row just written to the memtable indexes, and now
// and then drops what flushes have put in tables since.
func (t *Table) fileInMemory(lsmSeq uint64, doc Doc, p posting) error {
	var flushed uint64
	if p.seq%pruneEvery == 0 {
		var err error
		if flushed, err = t.primary.FlushedSeq(); err != nil {
			return err
		}
	}
	for _, ix := range t.indexes {
		if ix.mem == nil {
			continue
		}
		if v, ok := doc[ix.Name]; ok {
			ix.mem.add(lsmSeq, v, p)
		}
		if flushed > 0 {
			ix.mem.prune(flushed)
		}
	}
	return nil
}

// Get returns pk's row.
func (t *Table) Get(pk string) (*Row, error) {
	if pk == "" {
		return nil, ErrBadKey
	}
	return t.get(pk)
}

func (t *Table) get(pk string) (*Row, error) {
	v, err := t.primary.Get(rowKey(pk))
	if errors.Is(err, lsm.ErrNotFound) {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, pk)
	}
	if err != nil {
		return nil, err
	}
	seq, doc, err := decodeDoc(v)
	if err != nil {
		return nil, fmt.Errorf("row %q: %w", pk, err)
	}
	return &Row{Key: pk, Seq: seq, Doc: doc}, nil
}

// valid returns the row an entry points at if the entry is current.
func (t *Table) valid(p posting) (*Row, error) {
	r, err := t.get(p.pk)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil || r.Seq != p.seq {
		return nil, err
	}
	return r, nil
}

// Lookup returns the k most recent rows whose attr equals v, newest first
// (k = 0: all of them).
func (t *Table) Lookup(attr string, v Value, k int) ([]Row, error) {
	ix, err := t.index(attr, k, v)
	if err != nil {
		return nil, err
	}
	switch ix.Strategy {
	case Embedded:
		return t.embeddedScan(attr, v, v, k, nil)
	case BloomHierarchy:
		return t.hierarchyLookup(ix, v, k)
	}
	return ix.lookup(t, v, k)
}

// RangeLookup returns the k most recent rows whose attr lies in [a, b],
// newest first (k = 0: all of them).
func (t *Table) RangeLookup(attr string, a, b Value, k int) ([]Row, error) {
	ix, err := t.index(attr, k, a, b)
	if err != nil {
		return nil, err
	}
	if a.Compare(b) >= 0 {
		return nil, fmt.Errorf("%w: [%v, %v]", ErrBadRange, a, b)
	}
	if ix.Strategy == Embedded || ix.Strategy == BloomHierarchy {
		return t.embeddedScan(attr, a, b, k, nil)
	}
	return ix.rangeLookup(t, a, b, k)
}

func (t *Table) index(attr string, k int, vs ...Value) (*index, error) {
	ix := t.indexes[attr]
	if ix == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownAttr, attr)
	}
	if k < 0 {
		return nil, fmt.Errorf("%w: %d", ErrBadK, k)
	}
	for _, v := range vs {
		if v.Type != ix.Type {
			return nil, fmt.Errorf("%w: attribute %q is %v, got %v", ErrType, attr, ix.Type, v.Type)
		}
	}
	return ix, nil
}

// validator validates candidates once each: rows GetLite found current,
// and the answers of Gets already made.
type validator struct {
	t      *Table
	lite   map[posting]*Row // current without a Get
	got    map[posting]*Row // by a Get: nil when stale
	lsmSeq map[posting]uint64
}

func newValidator(t *Table) *validator {
	return &validator{t: t, lite: map[posting]*Row{}, got: map[posting]*Row{}, lsmSeq: map[posting]uint64{}}
}

// row returns p's row if p is current.
func (v *validator) row(p posting) (*Row, error) {
	if r, ok := v.lite[p]; ok {
		v.t.liteChecks.Add(1)
		return r, nil
	}
	if r, ok := v.got[p]; ok {
		return r, nil
	}
	v.t.getChecks.Add(1)
	r, err := v.t.valid(p)
	if err == nil && v.got != nil {
		v.got[p] = r
	}
	return r, err
}

// kth returns the lsm sequence number of the k-th newest current
// candidate, or 0 while fewer than k are current.
func (v *validator) kth(cands []posting, k int) (uint64, error) {
	rows, err := v.t.topK(slices.Clone(cands), k, v)
	if err != nil || len(rows) < k {
		return 0, err
	}
	last := rows[k-1]
	return v.lsmSeq[posting{last.Seq, last.Key}], nil
}

// topK validates candidates newest first until k rows are found; v (nil:
// one that knows nothing and remembers nothing, for the stand-alone
// indexes, which validate each candidate once) remembers what is known.
func (t *Table) topK(cands []posting, k int, v *validator) ([]Row, error) {
	if v == nil {
		v = &validator{t: t}
	}
	slices.SortFunc(cands, func(a, b posting) int {
		if c := cmp.Compare(b.seq, a.seq); c != 0 { // newest first
			return c
		}
		return cmp.Compare(a.pk, b.pk)
	})
	var out []Row
	for i, p := range cands {
		if i > 0 && p == cands[i-1] {
			continue
		}
		r, err := v.row(p)
		if err != nil {
			return nil, err
		}
		if r == nil {
			continue
		}
		out = append(out, *r)
		if k > 0 && len(out) == k {
			break
		}
	}
	return out, nil
}

// Flush writes every engine's memtable to a table.
func (t *Table) Flush() error {
	errs := []error{t.primary.Flush()}
	for _, ix := range t.indexes {
		if ix.db != nil {
			errs = append(errs, ix.db.Flush())
		}
	}
	return errors.Join(errs...)
}

// Compact compacts every engine fully.
func (t *Table) Compact(ctx context.Context) error {
	errs := []error{t.primary.Compact(ctx, nil, nil)}
	for _, ix := range t.indexes {
		if ix.db != nil {
			errs = append(errs, ix.db.Compact(ctx, nil, nil))
		}
	}
	return errors.Join(errs...)
}

// Metrics are a table's costs, summed over its engines.
type Metrics struct {
	DiskBytes       uint64 // live tables
	BlocksRead      int64  // data blocks read, from the cache or disk
	CompactBytesOut int64  // written by compactions
	FlushBytes      int64
	// The Bloom filter hierarchy's probes, and what flat checks of every
	// table's filter would have cost.
	HierarchyProbes, FlatProbes uint64
	DELIRepaired                uint64 // stale DELI entries deleted
	// Candidates validated from bloom filters alone (Embedded's GetLite)
	// and by a Get of the row.
	LiteValidations, GetValidations uint64
	// Tables an Embedded scan passed over: older than its k-th result.
	TablesSkipped uint64
}

// Metrics returns the table's metrics.
func (t *Table) Metrics() Metrics {
	var m Metrics
	add := func(lm *lsm.Metrics) {
		m.DiskBytes += lm.DiskSize()
		m.BlocksRead += lm.BlocksFromCache + lm.BlocksFromDisk
		m.CompactBytesOut += lm.CompactBytesOut
		m.FlushBytes += lm.FlushBytes
	}
	add(t.primary.Metrics())
	for _, ix := range t.indexes {
		if ix.db != nil {
			add(ix.db.Metrics())
		}
		if ix.bfh != nil {
			ix.bfh.mu.Lock()
			m.HierarchyProbes += ix.bfh.probes
			m.FlatProbes += ix.bfh.flat
			ix.bfh.mu.Unlock()
		}
	}
	m.DELIRepaired = t.repaired.Load()
	m.LiteValidations, m.GetValidations = t.liteChecks.Load(), t.getChecks.Load()
	m.TablesSkipped = t.tablesSkipped.Load()
	return m
}
