package manifest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/seed84792017/cellcast/lsm/internal/base"
)

func meta(num uint64, lo, hi string, seq uint64) *FileMetadata {
	return &FileMetadata{Num: num, Size: 100, Smallest: base.MakeKey([]byte(lo), seq, base.KindSet),
		Largest: base.MakeKey([]byte(hi), seq, base.KindSet), SmallestSeq: seq, LargestSeq: seq}
}

func TestEditRoundTrip(t *testing.T) {
	e := &VersionEdit{LogNum: 7, NextFileNum: 12, LastSeq: 99,
		Deleted: []DeletedFile{{1, 3}, {0, 4}},
		Added:   []NewFile{{2, meta(9, "a", "m", 5)}, {0, meta(10, "c", "d", 8)}}}
	var d VersionEdit
	if err := d.Decode(e.Encode()); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(d.Deleted) != fmt.Sprint(e.Deleted) || d.LogNum != 7 || d.NextFileNum != 12 || d.LastSeq != 99 ||
		len(d.Added) != 2 || d.Added[0].Meta.String() != e.Added[0].Meta.String() || d.Added[1].Level != 0 {
		t.Fatalf("decoded %+v", d)
	}
	enc := e.Encode()
	for cut := 1; cut < len(enc); cut++ {
		if err := d.Decode(enc[:cut]); err != nil && !errors.Is(err, ErrBadEdit) {
			t.Fatalf("cut %d: %v", cut, err)
		}
	}
}

func TestApplyAndRefs(t *testing.T) {
	v0 := &Version{}
	v0.refs.Store(1)
	a, b, c := meta(1, "a", "c", 1), meta(2, "d", "f", 2), meta(3, "b", "e", 3)
	v1, err := v0.Apply(&VersionEdit{Added: []NewFile{{1, a}, {1, b}, {0, c}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v1.Apply(&VersionEdit{Added: []NewFile{{1, meta(4, "c", "d", 4)}}}); err == nil {
		t.Fatal("overlapping L1 files accepted")
	}
	v2, err := v1.Apply(&VersionEdit{Deleted: []DeletedFile{{1, 1}}, Added: []NewFile{{2, meta(5, "a", "c", 1)}}})
	if err != nil {
		t.Fatal(err)
	}
	if obs := v1.Unref(); len(obs) != 1 || obs[0] != a {
		t.Fatalf("obsolete after v1 unref: %v", obs)
	}
	if obs := v2.Unref(); len(obs) != 3 {
		t.Fatalf("obsolete after v2 unref: %v", obs)
	}
}

func TestOverlappingL0Expands(t *testing.T) {
	v := &Version{}
	v.refs.Store(1)
	v, _ = v.Apply(&VersionEdit{Added: []NewFile{
		{0, meta(1, "a", "c", 1)}, {0, meta(2, "c", "f", 2)}, {0, meta(3, "x", "z", 3)},
		{1, meta(4, "a", "b", 0)}, {1, meta(5, "d", "e", 0)}, {1, meta(6, "g", "h", 0)},
	}})
	if got := v.Overlapping(0, []byte("a"), []byte("a")); len(got) != 2 {
		t.Fatalf("L0 overlap of a: %v", got)
	}
	if got := v.Overlapping(1, []byte("b"), []byte("d")); len(got) != 2 || got[0].Num != 4 || got[1].Num != 5 {
		t.Fatalf("L1 overlap of b-d: %v", got)
	}
	if got := v.Overlapping(1, nil, nil); len(got) != 3 {
		t.Fatalf("L1 unbounded: %v", got)
	}
}

func FuzzDecodeEdit(f *testing.F) {
	f.Add((&VersionEdit{LogNum: 1, Added: []NewFile{{1, meta(1, "a", "b", 1)}}}).Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		var e VersionEdit
		if err := e.Decode(b); err != nil && !errors.Is(err, ErrBadEdit) {
			t.Fatal(err)
		}
	})
}
