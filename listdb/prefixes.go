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

// DescendantsPrefix is the filter entry present in a table holding any key
// strictly under cell (of list l, when flagged).
func DescendantsPrefix(cell []byte, flagged bool, l List) []byte {
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
	var ends []int
	dewey.PrefixEnds(key[1:], func(end int) { ends = append(ends, 1+end) })
	var buf []byte
	for _, e := range ends[:max(len(ends)-1, 0)] { // proper ancestors only
		buf = append(append(buf[:0], key[:e]...), descMarker)
		add(buf)
		if flagged {
			add(append(buf, key[len(key)-1]))
		}
	}
}
