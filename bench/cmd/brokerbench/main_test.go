package main

import (
	"testing"

	"github.com/seed84792017/cellcast/dewey"
)

// TestOracle checks the benchmark's judge: the pairs it expects, and that
// a miss, a duplicate and an extra are each caught.
func TestOracle(t *testing.T) {
	const s = int64(1_000_000_000)
	bk := &book{
		subs: []subRec{
			{ts: 10 * s, tmin: 5 * s, tmax: 20 * s, cell: dewey.MustParse("1.2.3")},
			{ts: 10 * s, tmin: 5 * s, tmax: 20 * s, cell: dewey.MustParse("1.4")},
		},
		pubs: []pubRec{
			{tp: 6 * s, tmax: 30 * s, cell: dewey.MustParse("1.2")},      // past for the first
			{tp: 7 * s, tmax: 9 * s, cell: dewey.MustParse("1")},         // expired before both
			{tp: 12 * s, tmax: 30 * s, cell: dewey.MustParse("1.2.3.1")}, // live for the first
			{tp: 13 * s, tmax: 30 * s, cell: dewey.MustParse("1")},       // live for both
			{tp: 25 * s, tmax: 30 * s, cell: dewey.MustParse("1")},       // after both ended
		},
	}
	bk.subs[1].ts++ // stamps are unique
	live, past := expected(bk)
	if len(live) != 3 || len(past) != 1 || past[0] != (pair{10 * s, 6 * s}) {
		t.Fatalf("expected live %v, past %v", live, past)
	}
	if c := compare(live, append([]pair(nil), live...)); c.missing+c.dup+c.extra != 0 || c.want != 3 {
		t.Fatalf("exact delivery judged %+v", c)
	}
	got := []pair{live[0], live[0], live[1], {1, 2}}
	if c := compare(live, got); c.missing != 1 || c.dup != 1 || c.extra != 1 {
		t.Fatalf("a miss, a duplicate and an extra judged %+v", c)
	}
}

func TestStamp(t *testing.T) {
	if stamp("zz-1") != 36*35+35 || stamp("nodash") != 0 {
		t.Fatal("stamps")
	}
}
