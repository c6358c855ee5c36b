package lsm

import "bytes"

// settledKeys are the keys a range visit has settled: their older
// fragments, in components visited later, are not to be visited. A visit
// walks each component (a memtable, a table) in key order, so the set is
// a sorted list read with a cursor that only moves forward within a
// component, and each component's newly settled keys, already in order,
// are merged in when it ends. A map of strings cost an allocation per
// key settled: 7% of the bytes a broker allocated at 1:3 in peerbench.
type settledKeys struct {
	keys []byte // the settled keys, sorted, back to back
	ends []int  // where each key of keys ends
	cur  int    // the cursor: keys before it are below the current key
	// added are the current component's settled keys, in order.
	added     []byte
	addedEnds []int
	// spare is the previous keys/ends, reused by the next merge.
	spareKeys []byte
	spareEnds []int
}

func (s *settledKeys) key(i int) []byte {
	start := 0
	if i > 0 {
		start = s.ends[i-1]
	}
	return s.keys[start:s.ends[i]]
}

func (s *settledKeys) addedKey(i int) []byte {
	start := 0
	if i > 0 {
		start = s.addedEnds[i-1]
	}
	return s.added[start:s.addedEnds[i]]
}

// has reports whether k is settled. Within a component, k must not be
// below the key of the previous call.
func (s *settledKeys) has(k []byte) bool {
	if n := len(s.addedEnds); n > 0 && bytes.Equal(s.addedKey(n-1), k) {
		return true // settled earlier in this component
	}
	for s.cur < len(s.ends) {
		switch c := bytes.Compare(s.key(s.cur), k); {
		case c == 0:
			return true
		case c > 0:
			return false
		}
		s.cur++
	}
	return false
}

// settle adds k, not below any key settled in this component.
func (s *settledKeys) settle(k []byte) {
	if n := len(s.addedEnds); n > 0 && bytes.Equal(s.addedKey(n-1), k) {
		return
	}
	s.added = append(s.added, k...)
	s.addedEnds = append(s.addedEnds, len(s.added))
}

// endComponent merges the component's settled keys in and rewinds the
// cursor for the next component.
func (s *settledKeys) endComponent() {
	s.cur = 0
	if len(s.addedEnds) == 0 {
		return
	}
	keys, ends := s.spareKeys[:0], s.spareEnds[:0]
	i, j := 0, 0
	for i < len(s.ends) || j < len(s.addedEnds) {
		var k []byte
		switch {
		case j == len(s.addedEnds):
			k, i = s.key(i), i+1
		case i == len(s.ends):
			k, j = s.addedKey(j), j+1
		default:
			a, b := s.key(i), s.addedKey(j)
			switch c := bytes.Compare(a, b); {
			case c < 0:
				k, i = a, i+1
			case c > 0:
				k, j = b, j+1
			default:
				k, i, j = a, i+1, j+1
			}
		}
		keys = append(keys, k...)
		ends = append(ends, len(keys))
	}
	s.spareKeys, s.spareEnds = s.keys, s.ends
	s.keys, s.ends = keys, ends
	s.added, s.addedEnds = s.added[:0], s.addedEnds[:0]
}
