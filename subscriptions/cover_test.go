package subscriptions

import (
	"errors"
	"math/rand"
	"strings"
	"testing"

	"github.com/seed84792017/cellcast/dewey"
)

// Of all the (a, b) cell pairs of two records, exactly one is canonical
// when any pair overlaps and none otherwise, and both records agree on it
// whatever order their covers are listed in.
func TestCanonicalPicksOnePair(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	draw := func() []Cell {
		cs := make([]Cell, 1+rng.Intn(5))
		for i := range cs {
			id := dewey.ID{1}
			for d := rng.Intn(4); d > 0; d-- {
				id = id.Child(uint32(1 + rng.Intn(3)))
			}
			cs[i] = Cell{NS: NSCell, ID: id}
		}
		return cs
	}
	// overlap by string prefix, apart from Cell.Overlaps
	overlap := func(a, b Cell) bool {
		x, y := a.ID.String(), b.ID.String()
		return x == y || strings.HasPrefix(x, y+".") || strings.HasPrefix(y, x+".")
	}
	for i := 0; i < 20000; i++ {
		ac, bc := draw(), draw()
		hit, canonical := false, 0
		for _, a := range ac {
			for _, b := range bc {
				hit = hit || overlap(a, b)
			}
		}
		// Duplicated cells are one cell: count distinct canonical pairs.
		seen := map[string]bool{}
		shuffled := append([]Cell(nil), bc...)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		for _, a := range ac {
			for _, b := range bc {
				k := a.String() + "|" + b.String()
				if Canonical(ac, bc, a, b) && !seen[k] {
					seen[k] = true
					canonical++
					if !Canonical(ac, shuffled, a, b) {
						t.Fatalf("%v × %v: canonical pair (%v, %v) depends on the order", ac, bc, a, b)
					}
				}
			}
		}
		want := 0
		if hit {
			want = 1
		}
		if len(ac) == 1 && len(bc) == 1 {
			continue // one pair: reported without a check, overlap is Match's
		}
		if canonical != want {
			t.Fatalf("%v × %v: %d canonical pairs, want %d", ac, bc, canonical, want)
		}
		if got := overlapsAny(ac[0], &Cover{Cells: ac}, bc[0], &Cover{Cells: bc}); got != hit {
			t.Fatalf("%v × %v: overlapsAny %v, want %v", ac, bc, got, hit)
		}
	}
}

func TestCoverLimits(t *testing.T) {
	l := Limits{}.WithDefaults()
	a, b := cellOf("1.2"), cellOf("1.1.3")
	s, err := l.NewSubscription(&SubscribeRequest{Uid: "u", Cell: cellOf("9"), Cover: []Cell{a, b, a}}, 1)
	if err != nil || s.Cell.String() != "1.1.3" || s.Cover == nil || len(s.Cover.Cells) != 2 || s.Cover.Cells[1].String() != "1.2" {
		t.Fatalf("cover sorted and deduplicated, first as the cell: %+v %v", s, err)
	}
	if s, err := l.NewSubscription(&SubscribeRequest{Uid: "u", Cover: []Cell{a, a}}, 1); err != nil || s.Cover != nil || s.Cell.String() != "1.2" {
		t.Fatalf("a cover of one cell is that cell: %+v %v", s, err)
	}
	big := make([]Cell, MaxCover+1)
	for i := range big {
		big[i] = Cell{NS: NSCell, ID: dewey.ID{1, uint32(i + 1)}}
	}
	if _, err := l.NewPublication(&PublishRequest{Uid: "u", Cover: big}, 1); !errors.Is(err, ErrCover) || !errors.Is(err, ErrBadRequest) {
		t.Fatalf("%d cells: %v", len(big), err)
	}
	if _, err := l.NewPublication(&PublishRequest{Uid: "u", Cover: big[:MaxCover]}, 1); err != nil {
		t.Fatalf("%d cells: %v", MaxCover, err)
	}
}
