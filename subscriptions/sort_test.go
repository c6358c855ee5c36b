package subscriptions

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// randomPubs makes n publications with distinct stamps, from a base
// like a real stamp's, spread over about spread nanoseconds.
func randomPubs(rng *rand.Rand, n int, spread int64) []Publication {
	ps := make([]Publication, n)
	step := max(1, spread/int64(max(n, 1)))
	for i, tp := range rng.Perm(n) {
		ps[i] = Publication{Uid: fmt.Sprint("u", i), Tp: 1_800_000_000_000_000_000 + int64(tp)*step + rng.Int64N(step), Desc: fmt.Sprint("d", tp)}
	}
	return ps
}

// TestSortPublications holds SortPublications to a plain sort by stamp,
// newest first, on random, sorted and reversed inputs.
func TestSortPublications(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 600 {
		// Spreads of a minute, of two years and of centuries: the last
		// two make the stamp and the index outgrow one integer (the
		// second just past it for lists of 256 and more).
		spread := []int64{60e9, 1 << 56, 1 << 62}[round%3]
		ps := randomPubs(rng, rng.IntN(300), spread)
		switch round % 4 {
		case 1:
			slices.SortFunc(ps, func(a, b Publication) int { return cmp.Compare(b.Tp, a.Tp) })
		case 2:
			slices.SortFunc(ps, func(a, b Publication) int { return cmp.Compare(a.Tp, b.Tp) })
		case 3: // runs sorted newest first, as a scan of many lists finds them
			for i := 0; i < len(ps); i += 37 {
				run := ps[i:min(len(ps), i+37)]
				slices.SortFunc(run, func(a, b Publication) int { return cmp.Compare(b.Tp, a.Tp) })
			}
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
	src := randomPubs(rng, 360, 60e9)
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
