package lsm

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/seed84792017/cellcast/lsm/internal/base"
)

// sliceIter feeds fixed entries to a compactionIter.
type sliceIter struct {
	keys []base.InternalKey
	vals [][]byte
	i    int
}

func (s *sliceIter) First()                { s.i = 0 }
func (s *sliceIter) SeekGE([]byte)         { panic("unused") }
func (s *sliceIter) Next()                 { s.i++ }
func (s *sliceIter) Valid() bool           { return s.i < len(s.keys) }
func (s *sliceIter) Key() base.InternalKey { return s.keys[s.i] }
func (s *sliceIter) Value() []byte         { return s.vals[s.i] }
func (s *sliceIter) Error() error          { return nil }
func (s *sliceIter) Close() error          { return nil }

// parseEntries reads "a#5,MERGE=x a#3,SET=y".
func parseEntries(t *testing.T, spec string) *sliceIter {
	it := &sliceIter{}
	for _, f := range strings.Fields(spec) {
		var key, kind, val string
		var seq uint64
		eq := strings.IndexByte(f, '=')
		if eq >= 0 {
			val = f[eq+1:]
			f = f[:eq]
		}
		hash, comma := strings.IndexByte(f, '#'), strings.IndexByte(f, ',')
		key, kind = f[:hash], f[comma+1:]
		fmt.Sscan(f[hash+1:comma], &seq)
		k := map[string]base.Kind{"SET": base.KindSet, "DEL": base.KindDelete, "MERGE": base.KindMerge}[kind]
		it.keys = append(it.keys, base.MakeKey([]byte(key), seq, k))
		it.vals = append(it.vals, []byte(val))
	}
	sort.SliceStable(it.keys, func(i, j int) bool { return base.Compare(it.keys[i], it.keys[j]) < 0 })
	return it
}

// dropX removes values that are exactly "x" and rewrites "cx" to "c".
var dropX = CompactionFilterFunc(func(_ int, _ []byte, _ Kind, v []byte) (FilterDecision, []byte) {
	switch string(v) {
	case "x":
		return FilterRemove, nil
	case "cx":
		return FilterChange, []byte("c")
	}
	return FilterKeep, nil
})

// iterCase is one compactionIter input, its setting and its output.
type iterCase struct {
	name      string
	in        string
	snapshots []uint64
	base      bool // nothing below holds any key
	filter    CompactionFilter
	want      string
}

func TestCompactionIterRules(t *testing.T) {
	cases := []iterCase{
		{"merges concatenate newest first", "a#3,MERGE=c a#2,MERGE=b a#1,MERGE=a", nil, false, nil, "a#3,MERGE=cba"},
		{"merges become a set at the base", "a#3,MERGE=c a#2,MERGE=b", nil, true, nil, "a#3,SET=cb"},
		{"merges fold into a set below them", "a#3,MERGE=c a#2,SET=b a#1,MERGE=z", nil, false, nil, "a#3,SET=cb"},
		{"a delete ends the list", "a#3,MERGE=c a#2,DEL= a#1,SET=z", nil, false, nil, "a#3,SET=c"},
		{"newest set wins", "a#3,SET=c a#2,SET=b", nil, false, nil, "a#3,SET=c"},
		{"delete kept above data", "a#3,DEL= b#1,SET=x", nil, false, nil, "a#3,DEL= b#1,SET=x"},
		{"delete elided at the base", "a#3,DEL= a#1,SET=z", nil, true, nil, ""},
		{"snapshot keeps an older stripe", "a#5,MERGE=c a#3,MERGE=b a#2,MERGE=a", []uint64{3}, false, nil, "a#5,MERGE=c a#3,MERGE=ba"},
		{"snapshot keeps a shadowed set", "a#5,SET=new a#2,SET=old", []uint64{4}, true, nil, "a#5,SET=new a#2,SET=old"},
		{"delete kept for an older stripe", "a#5,DEL= a#2,SET=old", []uint64{3}, true, nil, "a#5,DEL= a#2,SET=old"},
		{"filter drops a merge fragment", "a#3,MERGE=x b#2,MERGE=y", nil, false, dropX, "b#2,MERGE=y"},
		{"filter rewrites", "a#3,MERGE=cx", nil, false, dropX, "a#3,MERGE=c"},
		{"removed set leaves a tombstone above data", "a#3,SET=x", nil, false, dropX, "a#3,DEL="},
		{"removed set vanishes at the base", "a#3,SET=x", nil, true, dropX, ""},
		{"filter skips what a snapshot sees", "a#3,SET=x b#9,SET=x", []uint64{5}, true, dropX, "a#3,SET=x"},
		{"removed top set keeps snapshot data hidden", "a#9,SET=x a#3,SET=old", []uint64{5}, true, dropX, "a#9,DEL= a#3,SET=old"},
	}
	// With zeroSeqs, as compactions below L0 run by default.
	zeroCases := []iterCase{
		{"zeroed: a set nothing below holds", "a#3,SET=c a#2,SET=b b#7,SET=d", nil, true, nil, "a#0,SET=c b#0,SET=d"},
		{"zeroed: merges folded at the base", "a#3,MERGE=c a#2,MERGE=b", nil, true, nil, "a#0,SET=cb"},
		{"zeroed: a filter's rewrite", "a#3,MERGE=c a#1,SET=x", nil, true, dropX, "a#0,SET=c"},
		{"kept: something below holds the key", "a#3,SET=c", nil, false, nil, "a#3,SET=c"},
		{"kept: a merge that reached no base", "a#3,MERGE=c", nil, false, nil, "a#3,MERGE=c"},
		{"kept: a delete above data", "a#3,DEL= b#1,SET=x", nil, false, nil, "a#3,DEL= b#1,SET=x"},
		{"kept: newer than a snapshot", "a#5,SET=new a#2,SET=old", []uint64{4}, true, nil, "a#5,SET=new a#0,SET=old"},
		{"kept: a stripe above the oldest", "a#9,SET=n b#5,SET=m", []uint64{4, 6}, true, nil, "a#9,SET=n b#5,SET=m"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkIterCase(t, tc, false) })
	}
	for _, tc := range zeroCases {
		t.Run(tc.name, func(t *testing.T) { checkIterCase(t, tc, true) })
	}
}

func checkIterCase(t *testing.T, tc iterCase, zeroSeqs bool) {
	ci := &compactionIter{in: parseEntries(t, tc.in), merger: ConcatMerger, filter: tc.filter,
		snapshots: tc.snapshots, isBase: func([]byte) bool { return tc.base }, zeroSeqs: zeroSeqs}
	var got []string
	for ok := ci.first(); ok; ok = ci.next() {
		k, v := ci.current()
		got = append(got, fmt.Sprintf("%s#%d,%s=%s", k.UserKey, k.Seq(), kindName(k.Kind()), v))
	}
	if ci.err != nil {
		t.Fatal(ci.err)
	}
	if strings.Join(got, " ") != tc.want {
		t.Fatalf("got  %q\nwant %q", strings.Join(got, " "), tc.want)
	}
	if tc.filter != nil && tc.want != tc.in && !ci.filterTouched && len(tc.snapshots) == 0 {
		t.Fatal("filter changed output without recording it")
	}
}

func kindName(k Kind) string {
	return map[Kind]string{KindSet: "SET", KindDelete: "DEL", KindMerge: "MERGE"}[k]
}

// TestCompactionReportsShadowedSets: OnShadowed hears of every Set that a
// newer entry hides from every reader, and of nothing a snapshot can see.
func TestCompactionReportsShadowedSets(t *testing.T) {
	for _, tc := range []struct {
		snapshots []uint64
		want      string
	}{
		{nil, "a=old a=older b=gone"},
		{[]uint64{2}, "a=old"},
	} {
		var got []string
		ci := &compactionIter{in: parseEntries(t, "a#5,SET=new a#3,SET=old a#1,SET=older b#4,DEL= b#2,SET=gone c#7,MERGE=x c#6,SET=base"),
			merger: ConcatMerger, snapshots: tc.snapshots, isBase: func([]byte) bool { return true },
			shadowed: func(k, v []byte) { got = append(got, string(k)+"="+string(v)) }}
		for ok := ci.first(); ok; ok = ci.next() {
		}
		if ci.err != nil {
			t.Fatal(ci.err)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("snapshots %v: shadowed %q, want %q", tc.snapshots, strings.Join(got, " "), tc.want)
		}
	}
}
