package lsm

import (
	"bytes"
	"sync"
)

// settledKeys are the keys a range visit has settled: their older
// fragments, in components visited later, are not to be visited. A visit
// walks each component (a memtable, a table) in key order, so the set is
// a sorted list read with a cursor that only moves forward within a
// component, and each component's newly settled keys, already in order,
// are merged in when it ends. A map of strings cost an allocation per
// key settled: 7% of the bytes a broker allocated at 1:3 in peerbench.
type settledKeys struct {
	all   keyList // the settled keys, sorted
	cur   int     // the cursor: keys of all before it are below the current key
	added keyList // the current component's settled keys, in order
	spare keyList // the previous all, reused by the next merge
}

// settledPool keeps settledKeys from one range visit to the next: grown
// afresh for each, their lists were 1% of a broker's CPU at 1:3.
var settledPool = sync.Pool{New: func() any { return new(settledKeys) }}

// maxPooledSettled bounds the key bytes a pooled set keeps (its three lists').
const maxPooledSettled = 1 << 20

func getSettled() *settledKeys { return settledPool.Get().(*settledKeys) }

// release empties s and pools it again, unless one huge visit grew it.
func (s *settledKeys) release() {
	if cap(s.all.buf)+cap(s.added.buf)+cap(s.spare.buf) > maxPooledSettled {
		return
	}
	s.all.reset()
	s.added.reset()
	s.spare.reset()
	s.cur = 0
	settledPool.Put(s)
}

// keyList is keys back to back.
type keyList struct {
	buf  []byte
	ends []int
}

func (l *keyList) len() int { return len(l.ends) }

func (l *keyList) at(i int) []byte {
	start := 0
	if i > 0 {
		start = l.ends[i-1]
	}
	return l.buf[start:l.ends[i]]
}

func (l *keyList) add(k []byte) {
	l.buf = append(l.buf, k...)
	l.ends = append(l.ends, len(l.buf))
}

func (l *keyList) reset() { l.buf, l.ends = l.buf[:0], l.ends[:0] }

// lastIs reports whether the list's last key is k.
func (l *keyList) lastIs(k []byte) bool { return l.len() > 0 && bytes.Equal(l.at(l.len()-1), k) }

// has reports whether k is settled. Within a component, k must not be
// below the key of the previous call.
func (s *settledKeys) has(k []byte) bool {
	if s.added.lastIs(k) {
		return true // settled earlier in this component
	}
	for ; s.cur < s.all.len(); s.cur++ {
		if c := bytes.Compare(s.all.at(s.cur), k); c >= 0 {
			return c == 0
		}
	}
	return false
}

// settle adds k, not below any key settled in this component.
func (s *settledKeys) settle(k []byte) {
	if !s.added.lastIs(k) {
		s.added.add(k)
	}
}

// endComponent merges the component's settled keys in and rewinds the
// cursor for the next component.
func (s *settledKeys) endComponent() {
	s.cur = 0
	if s.added.len() == 0 {
		return
	}
	merged := s.spare
	merged.reset()
	i, j := 0, 0
	for i < s.all.len() || j < s.added.len() {
		switch {
		case j == s.added.len():
			merged.add(s.all.at(i))
			i++
		case i == s.all.len():
			merged.add(s.added.at(j))
			j++
		default:
			a, b := s.all.at(i), s.added.at(j)
			c := bytes.Compare(a, b)
			if c <= 0 {
				merged.add(a)
				i++
			} else {
				merged.add(b)
			}
			if c >= 0 {
				j++
			}
		}
	}
	s.spare, s.all = s.all, merged
	s.added.reset()
}
