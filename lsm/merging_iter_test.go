package lsm

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/seed84792017/cellcast/lsm/internal/base"
)

// sortedIter walks keys sorted in internal-key order.
type sortedIter struct {
	keys []base.InternalKey
	i    int
}

func (s *sortedIter) First() { s.i = 0 }
func (s *sortedIter) SeekGE(k []byte) {
	s.i = sort.Search(len(s.keys), func(i int) bool { return bytes.Compare(s.keys[i].UserKey, k) >= 0 })
}
func (s *sortedIter) Next()                 { s.i++ }
func (s *sortedIter) Valid() bool           { return s.i < len(s.keys) }
func (s *sortedIter) Key() base.InternalKey { return s.keys[s.i] }
func (s *sortedIter) Value() []byte         { return []byte(s.keys[s.i].String()) }
func (s *sortedIter) Error() error          { return nil }
func (s *sortedIter) Close() error          { return nil }

func sortKeys(keys []base.InternalKey) {
	sort.Slice(keys, func(i, j int) bool { return base.Compare(keys[i], keys[j]) < 0 })
}

// TestMergingIterAgainstSort: merging random children, some skewed so one
// stays smallest for long runs, yields the sorted union from First and
// from any SeekGE.
func TestMergingIterAgainstSort(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for round := range 300 {
		var all []base.InternalKey
		var iters []internalIterator
		seq := uint64(1)
		for range rng.Intn(6) {
			var keys []base.InternalKey
			span := 1 + rng.Intn(200)
			for range rng.Intn(100) {
				keys = append(keys, base.MakeKey(fmt.Appendf(nil, "k%04d", rng.Intn(span)), seq, base.KindSet))
				seq++
			}
			sortKeys(keys)
			all = append(all, keys...)
			iters = append(iters, &sortedIter{keys: keys})
		}
		sortKeys(all)
		m := newMergingIter(iters)
		check := func(from int, what string) {
			i := from
			for ; m.Valid(); m.Next() {
				if i >= len(all) || base.Compare(m.Key(), all[i]) != 0 || string(m.Value()) != all[i].String() {
					t.Fatalf("round %d %s: entry %d is %s, want %v", round, what, i, m.Key(), all[i:min(i+1, len(all))])
				}
				i++
			}
			if i != len(all) {
				t.Fatalf("round %d %s: ended after %d of %d entries", round, what, i, len(all))
			}
		}
		m.First()
		check(0, "First")
		for range 5 {
			k := fmt.Appendf(nil, "k%04d", rng.Intn(220))
			m.SeekGE(k)
			check(sort.Search(len(all), func(i int) bool { return bytes.Compare(all[i].UserKey, k) >= 0 }), fmt.Sprintf("SeekGE(%s)", k))
		}
	}
}
