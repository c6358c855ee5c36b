package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/geo"
	"github.com/seed84792017/cellcast/service"
	"github.com/seed84792017/cellcast/subscriptions"
)

// Requests travel in a binary form too (replycodec.go): decoding them
// from JSON was most of what an owner spent on taking a request. Every
// value crosses unchecked, as JSON carried it: the owner's store checks
// the request as one node's would, and answers a bad one bad_request.
//
//	request := requestFormat flags op holder sid after owner route epoch skip sids [sub] [pub] [query]
//	sub     := uid cell cells past future keyword attrs until publisher limit shape prior   (self-join: a flag)
//	prior   := list(record), subscriptions in the store's encoding (replycodec.go)
//	pub     := uid cell cells expires desc attrs shape
//	shape   := 0 for none, or 1 and geo's binary form
//	query   := attr [eq] [from] [to] k
//	cell    := ns uvarint(len) uvarint(component)...
//	cells   := uvarint(0 for nil, else count+1) cell...
//	attrs   := uvarint(0 for nil, else count+1) (key value)...
//	sids    := uvarint(0 for nil, else count+1) sid...
const requestFormat byte = 5

// Request flags.
const (
	hasSub = 1 << iota
	hasPub
	hasQuery
	selfJoin
	hasEq
	hasFrom
	hasTo
)

var errBadRequestWire = errors.New("cluster: malformed request")

func encodeRequest(r *request) []byte {
	var flags flagSet
	set := flags.set
	set(hasSub, r.Sub != nil)
	set(hasPub, r.Pub != nil)
	set(hasQuery, r.Query != nil)
	set(selfJoin, r.Sub != nil && r.Sub.SelfJoin || r.Pub != nil && r.Pub.SelfJoin)
	if q := r.Query; q != nil {
		set(hasEq, q.Eq != nil)
		set(hasFrom, q.From != nil)
		set(hasTo, q.To != nil)
	}
	b := []byte{requestFormat, byte(flags)}
	for _, s := range []string{r.Op, r.Holder, r.Sid} {
		b = appendBytes(b, []byte(s))
	}
	b = binary.AppendVarint(b, r.After)
	b = appendBytes(b, []byte(r.Owner))
	b = binary.AppendUvarint(b, r.Route)
	b = binary.AppendUvarint(b, r.Epoch)
	b = binary.AppendVarint(b, int64(r.Skip))
	if r.Sids == nil {
		b = append(b, 0)
	} else {
		b = binary.AppendUvarint(b, uint64(len(r.Sids))+1)
		for _, sid := range r.Sids {
			b = appendBytes(b, []byte(sid))
		}
	}
	if s := r.Sub; s != nil {
		b = appendBytes(b, []byte(s.Uid))
		b = appendCells(appendWireCell(b, s.Cell), s.Cover)
		b = binary.AppendVarint(b, int64(s.Past))
		b = binary.AppendVarint(b, int64(s.Future))
		b = appendBytes(b, []byte(s.Filter.Keyword))
		b = appendAttrs(b, s.Filter.Attrs)
		b = binary.AppendVarint(b, s.Query.Until)
		b = appendBytes(b, []byte(s.Query.Publisher))
		b = binary.AppendVarint(b, int64(s.Query.Limit))
		b = appendShape(b, s.Shape)
		b = appendSubs(b, s.Prior)
	}
	if p := r.Pub; p != nil {
		b = appendBytes(b, []byte(p.Uid))
		b = appendCells(appendWireCell(b, p.Cell), p.Cover)
		b = binary.AppendVarint(b, int64(p.Expires))
		b = appendBytes(b, []byte(p.Desc))
		b = appendAttrs(b, p.Attrs)
		b = appendShape(b, p.Shape)
	}
	if q := r.Query; q != nil {
		b = appendBytes(b, []byte(q.Attr))
		for _, s := range []*string{q.Eq, q.From, q.To} {
			if s != nil {
				b = appendBytes(b, []byte(*s))
			}
		}
		b = binary.AppendVarint(b, int64(q.K))
	}
	return b
}

func appendWireCell(b []byte, c subscriptions.Cell) []byte {
	b = append(b, byte(c.NS))
	b = binary.AppendUvarint(b, uint64(len(c.ID)))
	for _, x := range c.ID {
		b = binary.AppendUvarint(b, uint64(x))
	}
	return b
}

func appendCells(b []byte, cells []subscriptions.Cell) []byte {
	if cells == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(cells))+1)
	for _, c := range cells {
		b = appendWireCell(b, c)
	}
	return b
}

func appendAttrs(b []byte, m map[string]string) []byte {
	if m == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(m))+1)
	for _, k := range slices.Sorted(maps.Keys(m)) { // one encoding per request
		b = appendBytes(appendBytes(b, []byte(k)), []byte(m[k]))
	}
	return b
}

// decodeRequest reads what encodeRequest wrote; a damaged request is an
// error matching errBadRequestWire, never a panic.
func decodeRequest(data []byte) (*request, error) {
	w := wireReader{b: data}
	if f := w.byte(); f != requestFormat {
		return nil, fmt.Errorf("%w: format %d (the nodes of a cluster must run one release)", errBadRequestWire, f)
	}
	flags := w.byte()
	r := &request{Op: w.str(), Holder: w.str(), Sid: w.str(), After: w.varint(), Owner: w.str(), Route: w.uvarint(), Epoch: w.uvarint(), Skip: int(w.varint())}
	if n, ok := w.list(); ok {
		r.Sids = make([]string, n)
		for i := range r.Sids {
			r.Sids[i] = w.str()
		}
	}
	if flags&hasSub != 0 {
		s := &subscriptions.SubscribeRequest{Uid: w.str(), Cell: w.cell(), SelfJoin: flags&selfJoin != 0}
		s.Cover = w.cells()
		s.Past, s.Future = time.Duration(w.varint()), time.Duration(w.varint())
		s.Filter.Keyword = w.str()
		s.Filter.Attrs = w.attrs()
		s.Query = subscriptions.Narrow{Until: w.varint(), Publisher: w.str(), Limit: int(w.varint())}
		s.Shape = w.shape()
		var err error
		if s.Prior, err = w.subs(nil); err != nil {
			return nil, fmt.Errorf("%w: %w", errBadRequestWire, err)
		}
		r.Sub = s
	}
	if flags&hasPub != 0 {
		p := &subscriptions.PublishRequest{Uid: w.str(), Cell: w.cell(), SelfJoin: flags&selfJoin != 0}
		p.Cover = w.cells()
		p.Expires = time.Duration(w.varint())
		p.Desc = w.str()
		p.Attrs = w.attrs()
		p.Shape = w.shape()
		r.Pub = p
	}
	if flags&hasQuery != 0 {
		q := &service.Query{Attr: w.str()}
		opt := func(bit byte) *string {
			if flags&bit == 0 {
				return nil
			}
			s := w.str()
			return &s
		}
		q.Eq, q.From, q.To = opt(hasEq), opt(hasFrom), opt(hasTo)
		q.K = int(w.varint())
		r.Query = q
	}
	switch {
	case w.bad:
		return nil, fmt.Errorf("%w: cut short", errBadRequestWire)
	case len(w.b) > 0:
		return nil, fmt.Errorf("%w: %d bytes left over", errBadRequestWire, len(w.b))
	}
	return r, nil
}

func appendShape(b []byte, s *geo.Shape) []byte {
	if s == nil {
		return append(b, 0)
	}
	return s.AppendBinary(append(b, 1))
}

func (w *wireReader) shape() *geo.Shape {
	if w.byte() == 0 || w.bad {
		return nil
	}
	s, rest, err := geo.DecodeShape(w.b)
	if err != nil {
		w.bad, w.b = true, nil
		return nil
	}
	w.b = rest
	return s
}

func (w *wireReader) cell() subscriptions.Cell {
	c := subscriptions.Cell{NS: subscriptions.Namespace(w.byte())}
	n := w.uvarint()
	if n > uint64(len(w.b)) { // each component takes a byte at least
		w.bad, w.b = true, nil
		return c
	}
	c.ID = make(dewey.ID, n)
	for i := range c.ID {
		x := w.uvarint()
		if x > math.MaxUint32 {
			w.bad, w.b = true, nil
		}
		c.ID[i] = uint32(x)
	}
	return c
}

func (w *wireReader) cells() []subscriptions.Cell {
	n, ok := w.list()
	if !ok {
		return nil
	}
	cells := make([]subscriptions.Cell, n)
	for i := range cells {
		cells[i] = w.cell()
	}
	return cells
}

func (w *wireReader) attrs() map[string]string {
	n, ok := w.list()
	if !ok {
		return nil
	}
	m := make(map[string]string, n)
	for range n {
		k := w.str()
		m[k] = w.str()
	}
	return m
}
