package listdb

import (
	"maps"
	"math/rand"
	"slices"
	"testing"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/subscriptions"
)

// TestDescendantMarkers: whatever key is written, the filter entries
// its FilterPrefixes name include the descendant marker of each of its
// proper ancestors that has one (a scan of that subtree may skip only
// tables that truly hold nothing under it), and nothing else but its own
// cell. The oracle builds each marker from the ancestor's components;
// geo cells have markers from minFilteredDepth down, topics at every
// depth.
func TestDescendantMarkers(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	cellKey := func(ns subscriptions.Namespace, id dewey.ID) []byte {
		return id.AppendEncoded([]byte{byte(ns)})
	}
	gated, ungated := 0, 0
	for range 5000 {
		ns := subscriptions.NSCell
		if rng.Intn(4) == 0 {
			ns = subscriptions.NSTopic
		}
		id := make(dewey.ID, 1+rng.Intn(20))
		for i := range id {
			if rng.Intn(8) == 0 {
				id[i] = uint32(1 + rng.Intn(1<<30)) // a long encoding
			} else {
				id[i] = uint32(1 + rng.Intn(6))
			}
		}
		cell := cellKey(ns, id)
		l := List(rng.Intn(2))
		key := append(append([]byte(nil), cell...), byte(l))
		want := map[string]bool{string(cell): true} // FlaggedCellPrefixes adds the cell itself
		wantPlain := map[string]bool{}
		for d := 1; d < len(id); d++ {
			anc := cellKey(ns, id[:d])
			if ns == subscriptions.NSCell && d < minFilteredDepth {
				if DescendantsPrefix(anc, false, l) != nil || DescendantsPrefix(anc, true, l) != nil {
					t.Fatalf("%v: ancestor %v of depth %d has a marker", id, id[:d], d)
				}
				ungated++
				continue
			}
			gated++
			marker := append(append([]byte(nil), anc...), descMarker)
			if got := DescendantsPrefix(anc, false, l); string(got) != string(marker) {
				t.Fatalf("%v: ancestor %v's marker %x, want %x", id, id[:d], got, marker)
			}
			flagged := append(append([]byte(nil), marker...), byte(l))
			if got := DescendantsPrefix(anc, true, l); string(got) != string(flagged) {
				t.Fatalf("%v: ancestor %v's marker of list %d %x, want %x", id, id[:d], l, got, flagged)
			}
			want[string(marker)], want[string(flagged)], wantPlain[string(marker)] = true, true, true
		}
		got := map[string]bool{}
		FlaggedCellPrefixes(key, func(p []byte) { got[string(p)] = true })
		if !maps.Equal(got, want) {
			t.Fatalf("%v (%d): DualDB entries %q, want %q", id, ns, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
		}
		got = map[string]bool{}
		CellPrefixes(cell, func(p []byte) { got[string(p)] = true })
		if !maps.Equal(got, wantPlain) {
			t.Fatalf("%v (%d): TwoDB entries %q, want %q", id, ns, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(wantPlain)))
		}
	}
	if gated == 0 || ungated == 0 {
		t.Fatalf("%d ancestors with markers, %d without: the test tells nothing", gated, ungated)
	}
}
