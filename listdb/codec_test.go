package listdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/geo"
	"github.com/seed84792017/cellcast/geo/geotest"
	"github.com/seed84792017/cellcast/lsm"
	"github.com/seed84792017/cellcast/subscriptions"
)

var cell = subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1, 4, 2}}

func TestRecordsRoundTrip(t *testing.T) {
	p := subscriptions.Publication{Uid: "u1", Cell: cell, Tp: 100, Tmax: 200, Desc: "fire", Attrs: map[string]string{"a": "1", "b": "2"}}
	s := subscriptions.Subscription{Uid: "u2", Cell: subscriptions.Cell{NS: subscriptions.NSTopic, ID: dewey.ID{3, 1}}, Ts: 150, Tmin: 90, Tmax: 300,
		SelfJoin: true, Filter: subscriptions.Filter{Keyword: "fire", Attrs: map[string]string{"k": "v"}}}
	c2 := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1, 4, 3}}
	c3 := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{2, 200, 1}}
	pc := subscriptions.Publication{Uid: "u3", Cell: cell, Cover: &subscriptions.Cover{Cells: []subscriptions.Cell{cell, c2, c3}}, Tp: 90, Tmax: 200,
		Shape: circle(41, -74, 300)}
	sc := subscriptions.Subscription{Uid: "u4", Cell: cell, Cover: &subscriptions.Cover{Cells: []subscriptions.Cell{cell, c3}}, Ts: 80, Tmin: 70, Tmax: 300,
		Shape: zone()}
	merged, err := Merger.Merge(nil, [][]byte{EncodeSubscription(&s), EncodePublication(&p), EncodePublication(&pc), EncodeSubscription(&sc)}, false)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := readHeader(merged)
	if h.count != 4 || h.newest != 150 || h.maxTmax != 300 {
		t.Fatalf("header %+v", h)
	}
	var got []any
	err = forEach(merged, func(r *Rec) bool {
		switch r.Kind {
		case KindPublication:
			q, err := r.Publication()
			got = append(got, q, err)
		case KindSubscription:
			q, err := r.Subscription()
			got = append(got, q, err)
		}
		return true
	})
	want := []any{s, nil, p, nil, pc, nil, sc, nil}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v (%v)", got, want, err)
	}
}

// Records written before covers (and points) existed end after attrs;
// they must still decode, as one-cell records. The bytes are spelt out
// here as the old encoder wrote them.
func TestOldRecordsDecode(t *testing.T) {
	payload := func(fields ...[]byte) []byte { return bytes.Join(fields, nil) }
	enc := cell.ID.Encode()
	cellField := append([]byte{byte(cell.NS), byte(len(enc))}, enc...)
	str := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	oldPub := fragment(KindPublication, 100, 200, 0, payload(cellField, str("u1"), str("fire"), []byte{0}))
	oldSub := fragment(KindSubscription, 150, 300, 90, payload(cellField, str("u2"), []byte{1}, str("kw"), []byte{0}))
	var got []string
	for _, f := range [][]byte{oldPub, oldSub} {
		err := forEach(f, func(r *Rec) bool {
			if r.Kind == KindPublication {
				p, err := r.Publication()
				got = append(got, fmt.Sprintf("%s %s %s %v %v %v", p.Uid, p.Cell, p.Desc, p.Cover == nil, p.Shape == nil, err))
			} else {
				s, err := r.Subscription()
				got = append(got, fmt.Sprintf("%s %s %s %v %v %v", s.Uid, s.Cell, s.Filter.Keyword, s.Cover == nil, s.SelfJoin, err))
			}
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if want := "[u1 1.4.2 fire true true <nil> u2 1.4.2 kw true true <nil>]"; fmt.Sprint(got) != want {
		t.Fatalf("got %v, want %s", got, want)
	}
}

func TestExpiryFilter(t *testing.T) {
	now := int64(1000)
	f := &ExpiryFilter{Now: func() int64 { return now + ExpiryGrace }}
	live := subscriptions.Publication{Uid: "u", Cell: cell, Tp: 10, Tmax: 2000}
	dead := subscriptions.Publication{Uid: "u", Cell: cell, Tp: 5, Tmax: 900}
	sub := subscriptions.Subscription{Uid: "u", Cell: cell, Ts: 20, Tmin: 0, Tmax: 3000}
	keep := subscriptions.Subscription{Uid: "v", Cell: cell, Ts: 21, Tmin: 0, Tmax: 3000}
	mk := func(ops ...[]byte) []byte { v, _ := Merger.Merge(nil, ops, false); return v }

	if d, _ := f.Filter(0, nil, lsm.KindMerge, mk(EncodePublication(&dead))); d != lsm.FilterRemove {
		t.Fatalf("expired fragment: %v", d)
	}
	if d, _ := f.Filter(0, nil, lsm.KindMerge, mk(EncodePublication(&live))); d != lsm.FilterKeep {
		t.Fatalf("live fragment: %v", d)
	}
	d, v := f.Filter(0, nil, lsm.KindMerge, mk(EncodePublication(&live), EncodePublication(&dead)))
	if d != lsm.FilterChange || !bytes.Equal(v, mk(EncodePublication(&live))) {
		t.Fatalf("mixed: %v %x", d, v)
	}
	// A cancel and its subscription in one value both go; others stay.
	d, v = f.Filter(0, nil, lsm.KindMerge, mk(EncodeCancel(30, 20, 3000), EncodeSubscription(&keep), EncodeSubscription(&sub)))
	if d != lsm.FilterChange || !bytes.Equal(v, mk(EncodeSubscription(&keep))) {
		t.Fatalf("cancel pair: %v", d)
	}
	// A cancel whose subscription lives elsewhere stays.
	if d, _ := f.Filter(0, nil, lsm.KindMerge, mk(EncodeCancel(30, 20, 3000))); d != lsm.FilterKeep {
		t.Fatalf("lone cancel: %v", d)
	}
}

// An operation still reading keeps every record live at its stamp, however
// far the clock has moved on; once it ends, they go.
func TestExpiryFilterKeepsWhatInFlightOperationsSee(t *testing.T) {
	tr := newInflight()
	now := 10 * ExpiryGrace
	f := &ExpiryFilter{Now: func() int64 { return now }, InFlight: tr.oldestStamp}
	p := subscriptions.Publication{Uid: "u", Cell: cell, Tp: 10, Tmax: 500}
	v, _ := Merger.Merge(nil, [][]byte{EncodePublication(&p)}, false)
	tr.begin(400) // live at its stamp: Tmax 500 >= 400
	tr.begin(450)
	tr.end(450)
	if d, _ := f.Filter(0, nil, lsm.KindMerge, v); d != lsm.FilterKeep {
		t.Fatalf("record an in-flight operation may report was %v", d)
	}
	tr.end(400)
	if got := tr.oldestStamp(); got != math.MaxInt64 {
		t.Fatalf("oldest in flight %d after every operation ended", got)
	}
	if d, _ := f.Filter(0, nil, lsm.KindMerge, v); d != lsm.FilterRemove {
		t.Fatalf("expired record with nothing in flight was %v", d)
	}
}

func FuzzFragment(f *testing.F) {
	p := subscriptions.Publication{Uid: "u1", Cell: cell, Tp: 100, Tmax: 200, Desc: "fire", Attrs: map[string]string{"a": "1"}}
	s := subscriptions.Subscription{Uid: "u2", Cell: cell, Ts: 150, Tmin: 90, Tmax: 300, Filter: subscriptions.Filter{Keyword: "x"}}
	v, _ := Merger.Merge(nil, [][]byte{EncodeSubscription(&s), EncodePublication(&p), EncodeCancel(160, 150, 300)}, false)
	f.Add(v)
	two := &subscriptions.Cover{Cells: []subscriptions.Cell{cell, {NS: subscriptions.NSCell, ID: dewey.ID{1, 5}}}}
	p.Cover, s.Cover = two, two
	p.Shape, s.Shape = circle(1, 2, 3), zone()
	v, _ = Merger.Merge(nil, [][]byte{EncodeSubscription(&s), EncodePublication(&p)}, false)
	f.Add(v)
	filter := &ExpiryFilter{Now: func() int64 { return 120 }}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := forEach(b, func(r *Rec) bool {
			var err error
			switch r.Kind {
			case KindPublication:
				_, err = r.Publication()
			case KindSubscription:
				_, err = r.Subscription()
			}
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode error %v is not ErrCorrupt", err)
			}
			return true
		})
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatal(err)
		}
		filter.Filter(0, nil, lsm.KindMerge, b)
	})
}

// The times collector summarizes blocks and tables by newest stamp and
// latest expiry; the filter passes exactly those with a record new enough
// and one still live. Deletes (no header) leave the summary alone.
func TestTimesCollectorAndFilter(t *testing.T) {
	c := NewTimesCollector()
	add := func(ts, tmax int64) {
		p := subscriptions.Publication{Uid: "u", Cell: cell, Tp: ts, Tmax: tmax}
		if err := c.Add(lsm.InternalKey{}, EncodePublication(&p)); err != nil {
			t.Fatal(err)
		}
	}
	add(100, 500)
	add(300, 400)
	if err := c.Add(lsm.InternalKey{}, nil); err != nil { // a tombstone
		t.Fatal(err)
	}
	block, _ := c.FinishDataBlock()
	add(50, 60)
	block2, _ := c.FinishDataBlock()
	table, _ := c.FinishTable()
	cases := []struct {
		name         string
		prop         []byte
		newer, alive int64
		want         bool
	}{
		{"both bounds met exactly", block, 300, 500, true},
		{"nothing new enough", block, 301, 0, false},
		{"nothing live", block, 0, 501, false},
		{"second block is old", block2, 100, 0, false},
		{"second block expired", block2, 0, 61, false},
		{"table spans both", table, 300, 500, true},
		{"table: nothing live", table, 0, 501, false},
		{"foreign summary is read", []byte{1, 2, 3}, 1 << 62, 1 << 62, true},
	}
	for _, tc := range cases {
		got, err := timeFilter{newerThan: tc.newer, liveAt: tc.alive}.Intersects(tc.prop)
		if err != nil || got != tc.want {
			t.Errorf("%s: Intersects = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

// A record's shape survives the round trip; a record written before
// shapes existed (payload ending after attrs) still decodes, and so does
// a point an earlier version wrote (tag 1), as a circle.
func TestRecordShape(t *testing.T) {
	p := subscriptions.Publication{Uid: "u", Cell: cell, Tp: 7, Tmax: 9, Desc: "flood", Shape: zone()}
	var got subscriptions.Publication
	var err error
	forEach(EncodePublication(&p), func(r *Rec) bool { got, err = r.Publication(); return false })
	if err != nil || got.Shape == nil || !sameShape(got.Shape, p.Shape) {
		t.Fatalf("got %+v, %v", got.Shape, err)
	}
	s := subscriptions.Subscription{Uid: "u", Cell: cell, Ts: 5, Tmin: 1, Tmax: 9, Shape: circle(40.758, -73.9855, 500)}
	var gs subscriptions.Subscription
	forEach(EncodeSubscription(&s), func(r *Rec) bool { gs, err = r.Subscription(); return false })
	if err != nil || gs.Shape == nil || !sameShape(gs.Shape, s.Shape) {
		t.Fatalf("subscription: %+v, %v", gs.Shape, err)
	}
	old := p
	old.Shape = nil
	legacy := EncodePublication(&old) // the version-1 layout: no trailing field
	forEach(legacy, func(r *Rec) bool { got, err = r.Publication(); return false })
	if err != nil || got.Shape != nil || got.Desc != "flood" {
		t.Fatalf("old record: %+v, %v", got, err)
	}
	point := append([]byte{}, legacy[headerLen+1+recFixed:]...)
	point = append(point, tagPoint)
	for _, f := range []float64{40.758, -73.9855, 500} {
		point = binary.LittleEndian.AppendUint64(point, math.Float64bits(f))
	}
	forEach(fragment(KindPublication, 7, 9, 0, point), func(r *Rec) bool { got, err = r.Publication(); return false })
	if err != nil || got.Shape == nil || !sameShape(got.Shape, circle(40.758, -73.9855, 500)) {
		t.Fatalf("a point of an earlier version: %+v, %v", got.Shape, err)
	}
	// A trailing byte that is not a field is corruption, not silence.
	bad := fragment(KindPublication, 7, 9, 0, append(legacy[headerLen+1+recFixed:], 9))
	forEach(bad, func(r *Rec) bool { _, err = r.Publication(); return false })
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("unknown trailing field: %v", err)
	}
}

func circle(lat, lng, r float64) *geo.Shape {
	s, err := geo.NewCircle(lat, lng, r)
	if err != nil {
		panic(err)
	}
	return s
}

func zone() *geo.Shape {
	s, err := geo.ParseGeoJSON([]byte(`{"type":"Polygon","coordinates":[[[-74,40.7],[-73.9,40.7],[-73.9,40.8],[-74,40.8],[-74,40.7]],[[-73.95,40.75],[-73.94,40.75],[-73.94,40.76],[-73.95,40.75]]]}`), 0)
	if err != nil {
		panic(err)
	}
	return s
}

func sameShape(a, b *geo.Shape) bool {
	return string(a.AppendBinary(nil)) == string(b.AppendBinary(nil))
}

// oldEncodePublication is the oracle for AppendPublication: the fragment
// built field by field, the record's length counted before it is written.
func oldEncodePublication(p *subscriptions.Publication) []byte {
	var pl []byte
	cell := func(c subscriptions.Cell) {
		enc := c.ID.Encode()
		pl = append(pl, byte(c.NS))
		pl = binary.AppendUvarint(pl, uint64(len(enc)))
		pl = append(pl, enc...)
	}
	str := func(s string) {
		pl = binary.AppendUvarint(pl, uint64(len(s)))
		pl = append(pl, s...)
	}
	cell(p.Cell)
	str(p.Uid)
	str(p.Desc)
	keys := make([]string, 0, len(p.Attrs))
	for k := range p.Attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pl = binary.AppendUvarint(pl, uint64(len(keys)))
	for _, k := range keys {
		str(k)
		str(p.Attrs[k])
	}
	if p.Cover != nil && len(p.Cover.Cells) > 1 {
		pl = append(pl, 2)
		pl = binary.AppendUvarint(pl, uint64(len(p.Cover.Cells)-1))
		for _, c := range p.Cover.Cells[1:] {
			cell(c)
		}
	}
	if p.Shape != nil {
		pl = p.Shape.AppendBinary(append(pl, 3))
	}
	rec := []byte{KindPublication}
	rec = binary.LittleEndian.AppendUint64(rec, uint64(p.Tp))
	rec = binary.LittleEndian.AppendUint64(rec, uint64(p.Tmax))
	rec = binary.LittleEndian.AppendUint64(rec, 0)
	rec = append(rec, pl...)
	out := []byte{1}
	out = binary.LittleEndian.AppendUint32(out, 1)
	out = binary.LittleEndian.AppendUint64(out, uint64(p.Tp))
	out = binary.LittleEndian.AppendUint64(out, uint64(p.Tmax))
	out = binary.AppendUvarint(out, uint64(len(rec)))
	return append(out, rec...)
}

// AppendPublication writes, after whatever dst holds, exactly the bytes
// the field-by-field encoder writes (records already on disk and in
// cluster logs read the same), and AppendSizedPublication puts their
// length first.
func TestAppendPublicationMatchesOracle(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	randCell := func() subscriptions.Cell {
		id := make(dewey.ID, 1+rng.Intn(40)) // past appendCell's room at times
		for i := range id {
			id[i] = uint32(1 + rng.Intn([]int{4, 300, 1 << 30}[rng.Intn(3)]))
		}
		return subscriptions.Cell{NS: subscriptions.Namespace(rng.Intn(3)), ID: id}
	}
	for i := range 3000 {
		p := subscriptions.Publication{Uid: fmt.Sprint("u", i), Cell: randCell(), Tp: rng.Int63() - rng.Int63(), Tmax: rng.Int63(),
			Desc: strings.Repeat("d", []int{0, 5, 200, 20000}[rng.Intn(4)])}
		if n := rng.Intn(14); n > 0 { // past appendMap's room at times
			p.Attrs = map[string]string{}
			for j := range n {
				p.Attrs[fmt.Sprint("k", rng.Intn(100), j)] = strings.Repeat("v", rng.Intn(300))
			}
		}
		if rng.Intn(2) == 0 {
			lat, lng := geotest.Place(rng)
			p.Shape = geotest.Shape(rng, lat, lng, 3000)
		}
		if n := rng.Intn(4); n > 0 {
			p.Cover = &subscriptions.Cover{Cells: []subscriptions.Cell{p.Cell}}
			for range n {
				p.Cover.Cells = append(p.Cover.Cells, randCell())
			}
		}
		want := oldEncodePublication(&p)
		prefix := []byte(fmt.Sprint("prefix", i))
		got := AppendPublication(append([]byte(nil), prefix...), &p)
		if !bytes.Equal(got[:len(prefix)], prefix) || !bytes.Equal(got[len(prefix):], want) {
			t.Fatalf("publication %d: AppendPublication differs from the oracle\n got %x\nwant %x", i, got[len(prefix):], want)
		}
		if !bytes.Equal(EncodePublication(&p), want) {
			t.Fatalf("publication %d: EncodePublication differs from the oracle", i)
		}
		sized := AppendSizedPublication(append([]byte(nil), prefix...), &p)
		n, k := binary.Uvarint(sized[len(prefix):])
		if k <= 0 || !bytes.Equal(sized[:len(prefix)], prefix) || n != uint64(len(want)) || !bytes.Equal(sized[len(prefix)+k:], want) {
			t.Fatalf("publication %d: AppendSizedPublication wrote %x", i, sized)
		}
		q, err := DecodePublication(got[len(prefix):])
		if err != nil || !reflect.DeepEqual(q, p) {
			t.Fatalf("publication %d: decoded %+v (%v), want %+v", i, q, err, p)
		}
	}
}

// go test ./listdb -run '^$' -bench EncodePublication -benchmem
func BenchmarkEncodePublication(b *testing.B) {
	p := subscriptions.Publication{Uid: "user-1234", Cell: subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1, 4, 2, 3, 1, 2, 4, 4}},
		Tp: 1 << 60, Tmax: 1<<60 + 1e10, Desc: "accident on the bridge, two lanes closed", Attrs: map[string]string{"kind": "accident"}}
	b.Run("Encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			EncodePublication(&p)
		}
	})
	b.Run("AppendSized", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = AppendSizedPublication(buf[:0], &p)
		}
	})
}
