package secondary

import (
	"bytes"
	"encoding/binary"
	"hash/fnv"

	"github.com/seed84792017/cellcast/lsm"
)

// The Embedded index lives in the primary table itself: a block property
// collector per attribute summarizes each data block by a bloom filter of
// the attribute's values and a zone map (the least and greatest value),
// and each table by its zone map. A lookup scans the rows, skipping every
// table and block whose summary rules the value (or range) out; the
// memtable has no blocks and is scanned whole. Writes cost nothing extra.

const embeddedBitsPerValue = 10

func collectorName(attr string) string { return "secondary.embedded." + attr }

// zoneBloom collects one attribute's summaries.
type zoneBloom struct {
	attr     string
	hashes   []uint64 // this block's values, hashed
	min, max []byte   // this block's zone
	tmin     []byte   // the table's zone
	tmax     []byte
	any      bool
}

func newZoneBloom(attr string) lsm.BlockPropertyCollector { return &zoneBloom{attr: attr} }

func (z *zoneBloom) Name() string { return collectorName(z.attr) }

func (z *zoneBloom) Add(k lsm.InternalKey, v []byte) error {
	if k.Kind() != lsm.KindSet || !bytes.HasPrefix(k.UserKey, []byte("r/")) {
		return nil
	}
	_, doc, err := decodeDoc(v)
	if err != nil {
		return nil // not ours to judge; reads report it
	}
	val, ok := doc[z.attr]
	if !ok {
		return nil
	}
	enc := val.appendKey(nil)
	z.hashes = append(z.hashes, hash(enc))
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
		bits := make([]byte, (nbits+7)/8)
		for _, h := range z.hashes {
			for _, bit := range probes(h, nbits) {
				bits[bit/8] |= 1 << (bit % 8)
			}
		}
		out = binary.AppendUvarint(out, nbits)
		out = append(out, bits...)
		out = appendZone(out, z.min, z.max)
	}
	z.hashes, z.min, z.max = z.hashes[:0], nil, nil
	return out, nil
}

func (z *zoneBloom) FinishTable() ([]byte, error) {
	if !z.any {
		return nil, nil
	}
	out := appendZone(binary.AppendUvarint(nil, 0), z.tmin, z.tmax)
	z.any, z.tmin, z.tmax = false, nil, nil
	return out, nil
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

// zoneFilter passes the tables and blocks that may hold a value in
// [lo, hi] (encoded), and with a point (lo == hi) whose bloom admits it.
type zoneFilter struct {
	name   string
	lo, hi []byte
	point  uint64
	exact  bool
}

func (f *zoneFilter) Name() string { return f.name }

func (f *zoneFilter) Intersects(prop []byte) (bool, error) {
	if len(prop) == 0 {
		return false, nil // nothing in it has the attribute
	}
	nbits, n := binary.Uvarint(prop)
	if n <= 0 || nbits > uint64(len(prop)-n)*8 {
		return true, nil // unreadable: read the block
	}
	bits := prop[n : n+int((nbits+7)/8)]
	rest := prop[n+len(bits):]
	lo, rest, ok1 := readZone(rest)
	hi, _, ok2 := readZone(rest)
	if !ok1 || !ok2 {
		return true, nil
	}
	if bytes.Compare(f.hi, lo) < 0 || bytes.Compare(f.lo, hi) > 0 {
		return false, nil
	}
	if f.exact && nbits > 0 {
		for _, bit := range probes(f.point, nbits) {
			if bits[bit/8]&(1<<(bit%8)) == 0 {
				return false, nil
			}
		}
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

// embeddedScan reads the rows whose blocks may hold a value of attr in
// [a, b] and keeps the k newest that do and are current.
func (t *Table) embeddedScan(attr string, a, b Value, k int) ([]Row, error) {
	lo, hi := a.appendKey(nil), b.appendKey(nil)
	f := &zoneFilter{name: collectorName(attr), lo: lo, hi: hi}
	if a.Compare(b) == 0 {
		f.exact, f.point = true, hash(lo)
	}
	it, err := t.primary.NewIter(&lsm.IterOptions{LowerBound: []byte("r/"), UpperBound: []byte("r0"), Filters: []lsm.BlockPropertyFilter{f}})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var cands []posting
	for ok := it.First(); ok; ok = it.Next() {
		seq, doc, err := decodeDoc(it.Value())
		if err != nil {
			return nil, err
		}
		// Skipped blocks may hide this row's newer version: topK
		// validates against the primary table.
		if v, ok := doc[attr]; ok && v.Type == a.Type && v.Compare(a) >= 0 && v.Compare(b) <= 0 {
			cands = append(cands, posting{seq, string(it.Key()[2:])})
		}
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	return t.topK(cands, k)
}
