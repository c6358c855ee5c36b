package secondary

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
	"slices"

	"github.com/seed84792017/cellcast/lsm"
)

// The Embedded index lives in the primary table itself: a block property
// collector per attribute summarizes each data block by a bloom filter of
// the attribute's values and a zone map (the least and greatest value),
// and each table by its zone map. A lookup scans the tables' rows,
// skipping every table and block whose summary rules the value (or range)
// out; the memtable's rows come from a small in-memory index (memindex.go).
// Writes cost nothing on disk.

const embeddedBitsPerValue = 10

func collectorName(attr string) string { return "secondary.embedded." + attr }

// hierarchyCollector also summarizes each table by a fixed-size bloom
// filter, the hierarchy's leaf.
func hierarchyCollector(attr string) lsm.BlockPropertyCollector {
	return &zoneBloom{attr: attr, name: collectorName(attr), tableBits: hierarchyBits}
}

// Summaries start with a kind: a block's, or a table's (which for the
// Bloom filter hierarchy also carries a bloom filter of the whole table
// and a nonce naming the table).
const (
	blockSummary = 'b'
	tableSummary = 't'
)

// zoneBloom collects one attribute's summaries.
type zoneBloom struct {
	attr      string
	name      string
	tableBits uint64   // 0: no table bloom (Embedded)
	all       []uint64 // the table's values, hashed, for the table bloom
	hashes    []uint64 // this block's values, hashed
	min, max  []byte   // this block's zone
	tmin      []byte   // the table's zone
	tmax      []byte
	any       bool
}

func newZoneBloom(attr string) lsm.BlockPropertyCollector {
	return &zoneBloom{attr: attr, name: collectorName(attr)}
}

func (z *zoneBloom) Name() string { return z.name }

func (z *zoneBloom) Add(k lsm.InternalKey, v []byte) error {
	if k.Kind() != lsm.KindSet || !bytes.HasPrefix(k.UserKey, []byte("r/")) {
		return nil
	}
	val, ok, err := docAttr(v, z.attr)
	if err != nil || !ok {
		return nil // not ours to judge a bad row; reads report it
	}
	enc := val.appendKey(nil)
	z.hashes = append(z.hashes, hash(enc))
	if z.tableBits > 0 {
		z.all = append(z.all, hash(enc))
	}
	if z.min == nil || bytes.Compare(enc, z.min) < 0 {
		z.min = enc
	}
	if z.max == nil || bytes.Compare(enc, z.max) > 0 {
		z.max = enc
	}
	if !z.any || bytes.Compare(enc, z.tmin) < 0 {
		z.tmin = enc
	}
	if !z.any || bytes.Compare(enc, z.tmax) > 0 {
		z.tmax = enc
	}
	z.any = true
	return nil
}

// A summary is: bloom bit count (0: no bloom), the bloom, then the zone's
// bounds, each length-prefixed. No zone at all means no value.
func (z *zoneBloom) FinishDataBlock() ([]byte, error) {
	var out []byte
	if len(z.hashes) > 0 {
		nbits := uint64(max(64, embeddedBitsPerValue*len(z.hashes)))
		out = append(out, blockSummary)
		out = binary.AppendUvarint(out, nbits)
		out = append(out, bloomBits(z.hashes, nbits)...)
		out = appendZone(out, z.min, z.max)
	}
	z.hashes, z.min, z.max = z.hashes[:0], nil, nil
	return out, nil
}

func (z *zoneBloom) FinishTable() ([]byte, error) {
	if !z.any {
		return nil, nil
	}
	out := []byte{tableSummary}
	out = binary.AppendUvarint(out, z.tableBits)
	if z.tableBits > 0 {
		out = binary.LittleEndian.AppendUint64(out, rand.Uint64()) // the nonce
		out = append(out, bloomBits(z.all, z.tableBits)...)
	}
	out = appendZone(out, z.tmin, z.tmax)
	z.any, z.tmin, z.tmax, z.all = false, nil, nil, z.all[:0]
	return out, nil
}

func bloomBits(hashes []uint64, nbits uint64) []byte {
	bits := make([]byte, (nbits+7)/8)
	for _, h := range hashes {
		for _, bit := range probes(h, nbits) {
			bits[bit/8] |= 1 << (bit % 8)
		}
	}
	return bits
}

func bloomHas(bits []byte, nbits, h uint64) bool {
	for _, bit := range probes(h, nbits) {
		if bits[bit/8]&(1<<(bit%8)) == 0 {
			return false
		}
	}
	return true
}

func appendZone(b, lo, hi []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(lo)))
	b = append(b, lo...)
	b = binary.AppendUvarint(b, uint64(len(hi)))
	return append(b, hi...)
}

func hash(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// probes are the bloom bits of a hash: six, by double hashing.
func probes(h, nbits uint64) [6]uint64 {
	var out [6]uint64
	h1, h2 := h, h>>33|h<<31|1
	for i := range out {
		out[i] = (h1 + uint64(i)*h2) % nbits
	}
	return out
}

// summary is a parsed summary.
type summary struct {
	kind   byte
	nbits  uint64
	nonce  uint64 // tables of the hierarchy only
	bits   []byte
	lo, hi []byte
}

func parseSummary(prop []byte) (summary, bool) {
	var s summary
	if len(prop) < 2 {
		return s, false
	}
	s.kind, prop = prop[0], prop[1:]
	nbits, n := binary.Uvarint(prop)
	if n <= 0 {
		return s, false
	}
	s.nbits, prop = nbits, prop[n:]
	if s.kind == tableSummary && nbits > 0 {
		if len(prop) < 8 {
			return s, false
		}
		s.nonce, prop = binary.LittleEndian.Uint64(prop), prop[8:]
	}
	if nbits > uint64(len(prop))*8 {
		return s, false
	}
	s.bits, prop = prop[:(nbits+7)/8], prop[(nbits+7)/8:]
	var ok1, ok2 bool
	s.lo, prop, ok1 = readZone(prop)
	s.hi, _, ok2 = readZone(prop)
	return s, ok1 && ok2
}

// zoneFilter passes the tables and blocks that may hold a value in
// [lo, hi] (encoded), and with a point (lo == hi) whose bloom admits it.
// skip (the hierarchy's verdicts) decides the tables it names without a
// probe of their own filters: true skips, false reads.
type zoneFilter struct {
	name   string
	lo, hi []byte
	point  uint64
	exact  bool
	skip   map[uint64]bool
}

func (f *zoneFilter) Name() string { return f.name }

func (f *zoneFilter) Intersects(prop []byte) (bool, error) {
	if len(prop) == 0 {
		return false, nil // nothing in it has the attribute
	}
	s, ok := parseSummary(prop)
	if !ok {
		return true, nil // unreadable: read it
	}
	if s.kind == tableSummary && s.nbits > 0 {
		if skip, ok := f.skip[s.nonce]; ok {
			return !skip, nil
		}
	}
	if bytes.Compare(f.hi, s.lo) < 0 || bytes.Compare(f.lo, s.hi) > 0 {
		return false, nil
	}
	if f.exact && s.nbits > 0 && !bloomHas(s.bits, s.nbits, f.point) {
		return false, nil
	}
	return true, nil
}

func readZone(b []byte) ([]byte, []byte, bool) {
	l, n := binary.Uvarint(b)
	if n <= 0 || l > uint64(len(b)-n) {
		return nil, nil, false
	}
	return b[n : n+int(l)], b[n+int(l):], true
}

// embeddedScan finds the k newest current rows whose attr lies in [a, b]
// (the study's level-by-level scan). The memtable's rows come from the
// in-memory index; then the tables are read one at a time, newest first,
// skipping blocks the summaries rule out. After each level the candidates
// so far are validated; once k are current, a table whose newest write
// is older than the k-th cannot hold a better one and is not read. skip
// names tables to pass over (the hierarchy's verdicts).
func (t *Table) embeddedScan(attr string, a, b Value, k int, skip map[uint64]bool) ([]Row, error) {
	lo, hi := a.appendKey(nil), b.appendKey(nil)
	f := &zoneFilter{name: collectorName(attr), lo: lo, hi: hi, skip: skip}
	if a.Compare(b) == 0 {
		f.exact, f.point = true, hash(lo)
	}
	v := newValidator(t)
	// The memtable's entries first: a flush after this moment leaves its
	// rows in the tables the scan pins next.
	var cands []posting
	for _, e := range t.indexes[attr].mem.collect(lo, hi) {
		cands = append(cands, e.p)
		v.lsmSeq[e.p] = e.lsmSeq
	}
	scan, err := t.primary.NewTableScan()
	if err != nil {
		return nil, err
	}
	defer scan.Close()
	var floor uint64 // tables with no write at or above it are not read
	floorOf := -1    // how many candidates floor was computed from
	tables := scan.Tables()
	for _, i := range newestFirst(tables) {
		tb := tables[i]
		if k > 0 && floorOf != len(cands) {
			if floor, err = v.kth(cands, k); err != nil {
				return nil, err
			}
			floorOf = len(cands)
		}
		if tb.LargestSeq < floor {
			t.tablesSkipped.Add(1)
			continue
		}
		if cands, err = t.scanTable(scan, i, f, attr, a, b, cands, v); err != nil {
			return nil, err
		}
	}
	return t.topK(cands, k, v)
}

// newestFirst orders a scan's tables for a top-k lookup: level by level,
// and within a level by newest write. A level's tables hold disjoint keys,
// so any order reads the same rows; newest first lets the k-th row's age
// rule out the rest of the level, where key order (time order, for keys
// that grow with time) would read the oldest first.
func newestFirst(tables []lsm.ScanTable) []int {
	order := make([]int, len(tables))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		x, y := tables[a], tables[b]
		if c := cmp.Compare(x.Level, y.Level); c != 0 {
			return c
		}
		if x.Level > 0 {
			if c := cmp.Compare(y.LargestSeq, x.LargestSeq); c != 0 {
				return c
			}
		}
		return cmp.Compare(a, b) // L0 as the scan gives it: newest first
	})
	return order
}

// scanTable adds table i's rows with attr in [a, b] to cands. A row that
// nothing skipped may shadow (GetLite) is known current without a Get.
func (t *Table) scanTable(scan *lsm.TableScan, i int, f *zoneFilter, attr string, a, b Value, cands []posting, v *validator) ([]posting, error) {
	it, err := scan.NewIter(i, &lsm.IterOptions{LowerBound: []byte("r/"), UpperBound: []byte("r0"), Filters: []lsm.BlockPropertyFilter{f}})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		val, ok, err := docAttr(it.Value(), attr)
		if err != nil {
			return nil, err
		}
		if !ok || val.Type != a.Type || val.Compare(a) < 0 || val.Compare(b) > 0 {
			continue
		}
		seq, doc, err := decodeDoc(it.Value())
		if err != nil {
			return nil, err
		}
		p := posting{seq, string(it.Key()[2:])}
		cands = append(cands, p)
		v.lsmSeq[p] = it.SeqNum()
		shadowed, err := it.MayBeShadowed()
		if err != nil {
			return nil, err
		}
		if !shadowed {
			v.lite[p] = &Row{Key: p.pk, Seq: seq, Doc: doc}
		}
	}
	return cands, it.Error()
}
