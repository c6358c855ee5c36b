package owed

// sums is a multiset of stamps in 24 bytes: how many, and two sums of
// independent hashes (wrapping), so that two multisets of equal size but
// different members differ in their sums but by a 2⁻¹²⁸ chance.
type sums struct {
	n      int64
	h1, h2 uint64
}

func (s *sums) add(tp int64) {
	s.n++
	s.h1 += mix(uint64(tp) ^ 0x9e3779b97f4a7c15)
	s.h2 += mix(uint64(tp) ^ 0xd1b54a32d192ed03)
}

// mix is splitmix64's finaliser.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Tally is, per subscription and kind, the multiset of publications owed
// or received, as sums.
type Tally struct {
	live, past []sums
	total      [2]int64
}

// NewTally tallies n subscriptions.
func NewTally(n int) *Tally { return &Tally{live: make([]sums, n), past: make([]sums, n)} }

// Add counts one pair; it is a Visit.
func (t *Tally) Add(k Kind, sub int, tp int64) {
	if k == Past {
		t.past[sub].add(tp)
	} else {
		t.live[sub].add(tp)
	}
	t.total[k]++
}

// Total is how many pairs of kind k were added.
func (t *Tally) Total(k Kind) int64 { return t.total[k] }

// Differ lists the subscriptions whose multisets of kind k differ in t
// and u, in index order.
func (t *Tally) Differ(u *Tally, k Kind) []int {
	a, b := t.live, u.live
	if k == Past {
		a, b = t.past, u.past
	}
	var out []int
	for i := range a {
		if a[i] != b[i] {
			out = append(out, i)
		}
	}
	return out
}
