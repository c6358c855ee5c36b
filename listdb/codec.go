package listdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/geo"
	"github.com/seed84792017/cellcast/subscriptions"
)

// Fragment layout (little endian):
//
//	0  version  byte (1)
//	1  count    uint32  records in the fragment
//	5  newest   int64   largest T of its records
//	13 maxTmax  int64   largest Tmax of its records
//	21 records, newest first
//
// Record layout:
//
//	uvarint  length of the rest of the record
//	kind     byte: 1 publication, 2 subscription, 3 cancel
//	t        int64: Tp, Ts, or the cancel's own time
//	tmax     int64
//	aux      int64: a subscription's Tmin, a cancel's target Ts, else 0
//	payload  kind-specific, length-prefixed fields
//
// A publication's payload is cell, uid, desc, attrs, a subscription's is
// cell, uid, flags, keyword, attrs. Optional fields follow, each a tag
// byte and its value: either record's cover (tag 2: uvarint count, then
// that many cells: the cells after the first, which is the record's cell)
// and its shape (tag 3: geo's binary form) when it was made at a point, a
// circle or a polygon. Tag 1 (a publication's point: lat, lng and radius
// as float64 bits) is what earlier versions wrote instead of a shape; it
// reads as a circle. Records written before these fields existed end
// after attrs and decode without them.
//
// Time fields sit at fixed offsets so scans and the compaction filter read
// them without decoding payloads.
const (
	fragVersion = 1
	headerLen   = 21
	recFixed    = 1 + 8 + 8 + 8
)

// Record kinds.
const (
	KindPublication  = 1
	KindSubscription = 2
	KindCancel       = 3
)

// ErrCorrupt is matched by errors decoding damaged lists.
var ErrCorrupt = errors.New("listdb: corrupt list")

type header struct {
	count   uint32
	newest  int64
	maxTmax int64
}

func readHeader(f []byte) (header, error) {
	if len(f) < headerLen || f[0] != fragVersion {
		return header{}, fmt.Errorf("%w: bad fragment header", ErrCorrupt)
	}
	return header{
		count:   binary.LittleEndian.Uint32(f[1:]),
		newest:  int64(binary.LittleEndian.Uint64(f[5:])),
		maxTmax: int64(binary.LittleEndian.Uint64(f[13:])),
	}, nil
}

func appendHeader(dst []byte, h header) []byte {
	dst = append(dst, fragVersion)
	dst = binary.LittleEndian.AppendUint32(dst, h.count)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(h.newest))
	return binary.LittleEndian.AppendUint64(dst, uint64(h.maxTmax))
}

// Rec is one record of a fragment; Raw is the whole encoded record.
type Rec struct {
	Kind         byte
	T, Tmax, Aux int64
	Raw, payload []byte
}

// forEach calls fn for each record of a fragment, newest first, until fn
// returns false.
func forEach(f []byte, fn func(r *Rec) bool) error { return forEachIn(f, new(Rec), fn) }

// forEachIn is forEach reading each record into r: a scan visits many
// fragments, and a Rec of its own for each would be an allocation each
// (fn keeps r out of the stack).
func forEachIn(f []byte, r *Rec, fn func(r *Rec) bool) error {
	if _, err := readHeader(f); err != nil {
		return err
	}
	p := f[headerLen:]
	for len(p) > 0 {
		n, m := binary.Uvarint(p)
		if m <= 0 || n < recFixed || n > uint64(len(p)-m) {
			return fmt.Errorf("%w: bad record length", ErrCorrupt)
		}
		body := p[m : m+int(n)]
		*r = Rec{
			Kind: body[0],
			T:    int64(binary.LittleEndian.Uint64(body[1:])),
			Tmax: int64(binary.LittleEndian.Uint64(body[9:])),
			Aux:  int64(binary.LittleEndian.Uint64(body[17:])),
			Raw:  p[:m+int(n)], payload: body[recFixed:],
		}
		if r.Kind < KindPublication || r.Kind > KindCancel {
			return fmt.Errorf("%w: record kind %d", ErrCorrupt, r.Kind)
		}
		if !fn(r) {
			return nil
		}
		p = p[m+int(n):]
	}
	return nil
}

// fragment builds a one-record fragment.
func fragment(kind byte, t, tmax, aux int64, payload []byte) []byte {
	out := make([]byte, 0, headerLen+lenRoom+recFixed+len(payload))
	out = appendHeader(out, header{count: 1, newest: t, maxTmax: tmax})
	at := len(out)
	out = appendFixed(append(out, make([]byte, lenRoom)...), kind, t, tmax, aux)
	return closeRecord(append(out, payload...), at)
}

// appendFixed appends a record's fixed fields.
func appendFixed(dst []byte, kind byte, t, tmax, aux int64) []byte {
	dst = append(dst, kind)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(t))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(tmax))
	return binary.LittleEndian.AppendUint64(dst, uint64(aux))
}

// lenRoom is the room left before a record (or, for AppendSizedPublication,
// a fragment) for its length, known once it is written: the largest
// uvarint.
const lenRoom = binary.MaxVarintLen64

// closeRecord writes the length of what follows dst[at:at+lenRoom] into
// that room, as a uvarint, and closes the gap left.
func closeRecord(dst []byte, at int) []byte {
	var l [lenRoom]byte
	k := binary.PutUvarint(l[:], uint64(len(dst)-at-lenRoom))
	copy(dst[at:], l[:k])
	copy(dst[at+k:], dst[at+lenRoom:])
	return dst[:len(dst)-(lenRoom-k)]
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func appendMap(dst []byte, m map[string]string) []byte {
	var room [8]string // most maps are small: their keys stay off the heap
	keys := room[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = binary.AppendUvarint(dst, uint64(len(keys)))
	for _, k := range keys {
		dst = appendString(dst, k)
		dst = appendString(dst, m[k])
	}
	return dst
}

func appendCell(dst []byte, c subscriptions.Cell) []byte {
	var room [32]byte
	enc := c.ID.AppendEncoded(room[:0])
	dst = append(dst, byte(c.NS))
	dst = binary.AppendUvarint(dst, uint64(len(enc)))
	return append(dst, enc...)
}

type reader struct {
	p   []byte
	err error
	// whole, when set, is the record's payload as one string, of which
	// string() returns slices: one allocation for a record's strings.
	whole string
	// ids, while a cover is read, holds its cells' components: one
	// allocation for all of them.
	ids []uint32
}

// readerOf reads payload, its strings slices of one copy of it.
func readerOf(payload []byte) reader { return reader{p: payload, whole: string(payload)} }

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.p)
	if n <= 0 {
		r.err = fmt.Errorf("%w: truncated field", ErrCorrupt)
		return 0
	}
	r.p = r.p[n:]
	return v
}

func (r *reader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.p)) {
		r.err = fmt.Errorf("%w: field past the record", ErrCorrupt)
		return nil
	}
	b := r.p[:n]
	r.p = r.p[n:]
	return b
}

func (r *reader) string() string {
	b := r.bytes()
	if r.whole == "" || r.err != nil {
		return string(b)
	}
	end := len(r.whole) - len(r.p)
	return r.whole[end-len(b) : end]
}

func (r *reader) byte() byte {
	if r.err == nil && len(r.p) == 0 {
		r.err = fmt.Errorf("%w: truncated field", ErrCorrupt)
	}
	if r.err != nil {
		return 0
	}
	b := r.p[0]
	r.p = r.p[1:]
	return b
}

func (r *reader) stringMap() map[string]string {
	n := r.uvarint()
	if r.err != nil || n == 0 {
		return nil
	}
	if n > uint64(len(r.p)) {
		r.err = fmt.Errorf("%w: map larger than the record", ErrCorrupt)
		return nil
	}
	m := make(map[string]string, n)
	for i := uint64(0); i < n && r.err == nil; i++ {
		k := r.string()
		m[k] = r.string()
	}
	return m
}

func (r *reader) cell() subscriptions.Cell {
	ns := subscriptions.Namespace(r.byte())
	enc := r.bytes()
	if r.err != nil {
		return subscriptions.Cell{}
	}
	var id dewey.ID
	var err error
	id, r.ids, err = dewey.DecodeOnto(r.ids, enc)
	if err != nil {
		r.err = fmt.Errorf("%w: cell: %w", ErrCorrupt, err)
	}
	return subscriptions.Cell{NS: ns, ID: id}
}

// EncodePublication returns a one-record fragment holding p.
func EncodePublication(p *subscriptions.Publication) []byte {
	return AppendPublication(make([]byte, 0, publicationRoom(p)), p)
}

// AppendPublication appends the fragment EncodePublication returns to
// dst, with no allocation when dst has room: cluster replies and batches
// carry hundreds of records each.
func AppendPublication(dst []byte, p *subscriptions.Publication) []byte {
	dst = appendHeader(dst, header{count: 1, newest: p.Tp, maxTmax: p.Tmax})
	at := len(dst)
	dst = appendFixed(append(dst, make([]byte, lenRoom)...), KindPublication, p.Tp, p.Tmax, 0)
	dst = appendCell(dst, p.Cell)
	dst = appendString(dst, p.Uid)
	dst = appendString(dst, p.Desc)
	dst = appendMap(dst, p.Attrs)
	dst = appendCover(dst, p.Cover)
	dst = appendShape(dst, p.Shape)
	return closeRecord(dst, at)
}

// AppendSizedPublication appends p's fragment preceded by its length as a
// uvarint, as a field of a message between cluster nodes.
func AppendSizedPublication(dst []byte, p *subscriptions.Publication) []byte {
	at := len(dst)
	return closeRecord(AppendPublication(append(dst, make([]byte, lenRoom)...), p), at)
}

// publicationRoom is room enough for most publications' fragments.
func publicationRoom(p *subscriptions.Publication) int {
	n := headerLen + lenRoom + recFixed + 64 + len(p.Uid) + len(p.Desc)
	for k, v := range p.Attrs {
		n += len(k) + len(v) + 4
	}
	if p.Cover != nil {
		n += 24 * len(p.Cover.Cells)
	}
	if p.Shape != nil {
		n += 1 + p.Shape.BinarySize()
	}
	return n
}

// EncodeSubscription returns a one-record fragment holding s.
func EncodeSubscription(s *subscriptions.Subscription) []byte {
	var pl []byte
	pl = appendCell(pl, s.Cell)
	pl = appendString(pl, s.Uid)
	var flags byte
	if s.SelfJoin {
		flags |= 1
	}
	pl = append(pl, flags)
	pl = appendString(pl, s.Filter.Keyword)
	pl = appendMap(pl, s.Filter.Attrs)
	pl = appendCover(pl, s.Cover)
	pl = appendShape(pl, s.Shape)
	return fragment(KindSubscription, s.Ts, s.Tmax, s.Tmin, pl)
}

// EncodeCancel returns a fragment cancelling the subscription stamped
// target, which expires at tmax (so the cancel expires with it).
func EncodeCancel(now, target, tmax int64) []byte {
	return fragment(KindCancel, now, tmax, target, nil)
}

// Publication decodes a publication record.
func (r *Rec) Publication() (subscriptions.Publication, error) {
	rd := readerOf(r.payload)
	p := subscriptions.Publication{Tp: r.T, Tmax: r.Tmax}
	p.Cell = rd.cell()
	p.Uid = rd.string()
	p.Desc = rd.string()
	p.Attrs = rd.stringMap()
	for rd.err == nil && len(rd.p) > 0 {
		switch tag := rd.byte(); tag {
		case tagPoint:
			p.Shape = rd.point()
		case tagCover:
			p.Cover = rd.cover(p.Cell)
		case tagShape:
			p.Shape = rd.shape()
		default:
			rd.err = fmt.Errorf("%w: unknown trailing field %d", ErrCorrupt, tag)
		}
	}
	return p, rd.err
}

// Tags of the optional trailing fields.
const (
	tagPoint = 1
	tagCover = 2
	tagShape = 3
)

func appendShape(dst []byte, s *geo.Shape) []byte {
	if s == nil {
		return dst
	}
	return s.AppendBinary(append(dst, tagShape))
}

func (r *reader) shape() *geo.Shape {
	if r.err != nil {
		return nil
	}
	s, rest, err := geo.DecodeShape(r.p)
	if err != nil {
		r.err = fmt.Errorf("%w: %w", ErrCorrupt, err)
		return nil
	}
	r.p = rest
	return s
}

// appendCover appends a cover's cells after the first, if it has any.
func appendCover(dst []byte, cover *subscriptions.Cover) []byte {
	if cover == nil || len(cover.Cells) < 2 {
		return dst
	}
	dst = append(dst, tagCover)
	dst = binary.AppendUvarint(dst, uint64(len(cover.Cells)-1))
	for _, c := range cover.Cells[1:] {
		dst = appendCell(dst, c)
	}
	return dst
}

// cover reads the cells after first.
func (r *reader) cover(first subscriptions.Cell) *subscriptions.Cover {
	n := r.uvarint()
	if r.err == nil && (n == 0 || n >= subscriptions.MaxCover) {
		r.err = fmt.Errorf("%w: cover of %d more cells", ErrCorrupt, n)
	}
	if r.err != nil {
		return nil
	}
	cs := make([]subscriptions.Cell, 1, n+1)
	cs[0] = first
	// Each component takes a byte at least: what is left of the payload
	// is room enough.
	r.ids = make([]uint32, 0, len(r.p))
	for i := uint64(0); i < n && r.err == nil; i++ {
		cs = append(cs, r.cell())
	}
	r.ids = nil
	return &subscriptions.Cover{Cells: cs}
}

// point reads an earlier version's point as a circle.
func (r *reader) point() *geo.Shape {
	if r.err == nil && len(r.p) < 24 {
		r.err = fmt.Errorf("%w: truncated point", ErrCorrupt)
	}
	if r.err != nil {
		return nil
	}
	f := func(i int) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(r.p[8*i:])) }
	s, err := geo.NewCircle(f(0), f(1), f(2))
	if err != nil {
		r.err = fmt.Errorf("%w: point: %w", ErrCorrupt, err)
		return nil
	}
	r.p = r.p[24:]
	return s
}

// Subscription decodes a subscription record.
func (r *Rec) Subscription() (subscriptions.Subscription, error) {
	rd := readerOf(r.payload)
	s := subscriptions.Subscription{Ts: r.T, Tmax: r.Tmax, Tmin: r.Aux}
	s.Cell = rd.cell()
	s.Uid = rd.string()
	s.SelfJoin = rd.byte()&1 != 0
	s.Filter.Keyword = rd.string()
	s.Filter.Attrs = rd.stringMap()
	for rd.err == nil && len(rd.p) > 0 {
		switch tag := rd.byte(); tag {
		case tagCover:
			s.Cover = rd.cover(s.Cell)
		case tagShape:
			s.Shape = rd.shape()
		default:
			rd.err = fmt.Errorf("%w: unknown trailing field %d", ErrCorrupt, tag)
		}
	}
	return s, rd.err
}
