package subscriptions

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func randomPubs(rng *rand.Rand, n int) []Publication {
	ps := make([]Publication, n)
	for i, tp := range rng.Perm(n) {
		ps[i] = Publication{Uid: fmt.Sprint("u", i), Tp: int64(tp) * 7, Desc: fmt.Sprint("d", tp)}
	}
	return ps
}

// TestSortPublications holds SortPublications to a plain sort by stamp,
// newest first, on random, sorted and reversed inputs.
func TestSortPublications(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		ps := randomPubs(rng, rng.IntN(300))
		switch round % 3 {
		case 1:
			slices.SortFunc(ps, func(a, b Publication) int { return cmp.Compare(b.Tp, a.Tp) })
		case 2:
			slices.SortFunc(ps, func(a, b Publication) int { return cmp.Compare(a.Tp, b.Tp) })
		}
		want := slices.Clone(ps)
		slices.SortFunc(want, func(a, b Publication) int { return cmp.Compare(b.Tp, a.Tp) })
		SortPublications(ps)
		for i := range want {
			if ps[i].Tp != want[i].Tp || ps[i].Uid != want[i].Uid || ps[i].Desc != want[i].Desc {
				t.Fatalf("round %d: at %d got %+v, want %+v", round, i, ps[i], want[i])
			}
		}
	}
}

// BenchmarkSortPublications sorts 360 past results (a subscription's
// share at 10k moving users, closed loop), against sorting the
// publications themselves as before:
//
//	go test ./subscriptions -run '^$' -bench SortPublications
func BenchmarkSortPublications(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	src := randomPubs(rng, 360)
	ps := make([]Publication, len(src))
	b.Run("stamps", func(b *testing.B) {
		for range b.N {
			copy(ps, src)
			SortPublications(ps)
		}
	})
	b.Run("publications", func(b *testing.B) {
		for range b.N {
			copy(ps, src)
			slices.SortFunc(ps, func(a, b Publication) int { return cmp.Compare(b.Tp, a.Tp) })
		}
	})
}
