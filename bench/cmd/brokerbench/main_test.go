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

func TestParseReply(t *testing.T) {
	r, err := parseReply([]byte(`{"id":"7","op":"subscribed","sid":"abc-1.2","cell":"1.2","ts":"x","expires_at":"2026-01-01T00:00:00Z","live":true,"results":[{"pid":"p1-1","uid":"u"},{"pid":"p2-1.2","uid":"u"}]}`))
	if err != nil || r.ID != "7" || r.Sid != "abc-1.2" || r.Cell != "1.2" || len(r.Results) != 2 || r.Results[1].Pid != "p2-1.2" {
		t.Fatalf("parseReply = %+v, %v", r, err)
	}
	r, err = parseReply([]byte(`{"id":"8","op":"error","code":"bad_request","message":"no \"cell\""}`))
	if err != nil || r.Code != "bad_request" || r.Message != `no "cell"` {
		t.Fatalf("error reply = %+v, %v", r, err)
	}
	if stampBytes([]byte("zz-1")) != 36*35+35 || stamp("zz-1") != 36*35+35 {
		t.Fatal("stamps")
	}
}
