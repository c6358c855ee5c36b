package listdb

import (
	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/subscriptions"
)

// Filter entries for subtree scans. A scan of a cell's subtree reads the
// cell's own lists with point lookups (full-key bloom filters) and its
// descendants with a range visit gated by DescendantsPrefix: for every key,
// each proper ancestor cell a is added as a‖0xFE (and, for keys ending in a
// list flag, a‖0xFE‖flag). 0xFE never begins a component, so no entry is a
// prefix of a real key.
const descMarker = 0xFE

// minFilteredDepth is the shallowest geo cell, in Dewey components, whose
// descendant marker goes into the filters. A subtree above it (S2 level 6
// and up, cells over 100 km across) has keys in nearly every table, so
// its marker cost an entry for every key written (half of a deep key's
// entries) and ruled out almost nothing. Topics, a shallow tree, keep
// every marker.
const minFilteredDepth = 8

// filtered reports whether the descendant marker of the ancestor with
// the given number of components is a filter entry, for a key of
// namespace ns.
func filtered(ns byte, depth int) bool {
	return ns != byte(subscriptions.NSCell) || depth >= minFilteredDepth
}

// DescendantsPrefix is the filter entry present in a table holding any key
// strictly under cell (of list l, when flagged), or nil when cell is too
// shallow to have one: a scan of its subtree cannot skip tables.
func DescendantsPrefix(cell []byte, flagged bool, l List) []byte {
	if len(cell) > 0 {
		depth := 0
		dewey.PrefixEnds(cell[1:], func(int) { depth++ })
		if !filtered(cell[0], depth) {
			return nil
		}
	}
	out := append(append(make([]byte, 0, len(cell)+2), cell...), descMarker)
	if flagged {
		out = append(out, byte(l))
	}
	return out
}

// CellPrefixes adds the descendant markers of a TwoDB list key.
func CellPrefixes(key []byte, add func([]byte)) { cellPrefixes(key, false, add) }

// FlaggedCellPrefixes adds the descendant markers of a DualDB list key, per
// list, and the key's cell itself, so reading both lists of one cell in one
// pass can skip tables holding neither.
func FlaggedCellPrefixes(key []byte, add func([]byte)) {
	if len(key) >= 2 {
		add(key[:len(key)-1])
	}
	cellPrefixes(key, true, add)
}

func cellPrefixes(key []byte, flagged bool, add func([]byte)) {
	if len(key) < 2 || (key[0] != byte(subscriptions.NSCell) && key[0] != byte(subscriptions.NSTopic)) {
		return
	}
	var room [32]int // most keys are no deeper: ends stay off the heap
	ends := room[:0]
	dewey.PrefixEnds(key[1:], func(end int) { ends = append(ends, 1+end) })
	var buf []byte
	for i, e := range ends[:max(len(ends)-1, 0)] { // proper ancestors only
		if !filtered(key[0], i+1) {
			continue
		}
		buf = append(append(buf[:0], key[:e]...), descMarker)
		add(buf)
		if flagged {
			add(append(buf, key[len(key)-1]))
		}
	}
}
