package owed

import (
	"cmp"
	"slices"
)

// Pairs is an exact multiset of pairs, for the few subscriptions whose
// tallies differ.
type Pairs map[pairKey]int

type pairKey struct {
	k   Kind
	sub int
	tp  int64
}

// Add counts one pair; it is a Visit.
func (p Pairs) Add(k Kind, sub int, tp int64) { p[pairKey{k, sub, tp}]++ }

// Only returns a Visit that adds the pairs of the subscriptions in subs.
func (p Pairs) Only(subs map[int]bool) Visit {
	return func(k Kind, sub int, tp int64) {
		if subs[sub] {
			p.Add(k, sub, tp)
		}
	}
}

// Problem is a pair received other than exactly once as owed.
type Problem struct {
	Kind      Kind
	Sub       int
	Tp        int64
	Owed, Got int // Owed is 0 or 1
}

// Compare lists the pairs whose counts differ in owed and got, by kind,
// subscription and stamp.
func Compare(owed, got Pairs) []Problem {
	var out []Problem
	for k, n := range owed {
		if got[k] != n {
			out = append(out, Problem{k.k, k.sub, k.tp, n, got[k]})
		}
	}
	for k, n := range got {
		if _, ok := owed[k]; !ok {
			out = append(out, Problem{k.k, k.sub, k.tp, 0, n})
		}
	}
	slices.SortFunc(out, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Sub, b.Sub), cmp.Compare(a.Tp, b.Tp))
	})
	return out
}
