package subscriptions

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/geo"
)

func cellOf(s string) Cell {
	c, err := ParseCell(s)
	if err != nil {
		panic(err)
	}
	return c
}

func TestIDsRoundTrip(t *testing.T) {
	for _, c := range []Cell{cellOf("1.4.2"), cellOf("t3.1")} {
		id := FormatID(1_700_000_000_123_456_789, c)
		ts, got, err := ParseID(id)
		if err != nil || ts != 1_700_000_000_123_456_789 || got.String() != c.String() || got.NS != c.NS {
			t.Fatalf("%s -> %d %v %v", id, ts, got, err)
		}
	}
	for _, bad := range []string{"", "-1", "x", "0-1", "z!-1", "10-", "10-1.0", "10-t"} {
		if _, _, err := ParseID(bad); !errors.Is(err, ErrBadID) || !errors.Is(err, ErrBadRequest) {
			t.Fatalf("ParseID(%q): %v", bad, err)
		}
	}
}

func TestOverlapIsSymmetricAndNamespaced(t *testing.T) {
	a, b := cellOf("1.4"), cellOf("1.4.1.2")
	if !a.Overlaps(b) || !b.Overlaps(a) || a.Overlaps(cellOf("1.5")) || a.Overlaps(cellOf("t1.4")) {
		t.Fatal("overlap")
	}
}

func TestMatchEdges(t *testing.T) {
	s := Subscription{Uid: "u", Cell: cellOf("1.4.1"), Ts: 100, Tmin: 90, Tmax: 110}
	p := Publication{Uid: "v", Cell: cellOf("1.4"), Tp: 90, Tmax: 200, Desc: "Big FIRE downtown", Attrs: map[string]string{"kind": "fire"}}
	if !Match(&p, &s, 100) {
		t.Fatal("ancestor publication at Tmin should match")
	}
	if p.Tp = 89; Match(&p, &s, 100) {
		t.Fatal("publication before Tmin matched")
	}
	p.Tp = 110
	if !Match(&p, &s, 110) || Match(&p, &s, 111) {
		t.Fatal("subscription expiry: live at 110, expired at 111")
	}
	p.Tp, p.Tmax = 95, 99
	if Match(&p, &s, 100) {
		t.Fatal("expired publication matched")
	}
	p.Tmax = 200
	s.Filter = Filter{Keyword: "fire"}
	if !Match(&p, &s, 100) {
		t.Fatal("case-insensitive keyword")
	}
	s.Filter = Filter{Attrs: map[string]string{"kind": "flood"}}
	if Match(&p, &s, 100) {
		t.Fatal("attribute filter ignored")
	}
}

func TestLimits(t *testing.T) {
	l := Limits{}.WithDefaults()
	req := &SubscribeRequest{Uid: "u", Cell: cellOf("1.2"), Past: time.Second, Future: 2 * time.Second}
	s, err := l.NewSubscription(req, 1000)
	if err != nil || s.Tmin != 1000-int64(time.Second) || s.Tmax != 1000+int64(2*time.Second) {
		t.Fatalf("%+v %v", s, err)
	}
	deep := Cell{NS: NSCell, ID: make(dewey.ID, geo.MaxDepth+1)}
	for i := range deep.ID {
		deep.ID[i] = 1
	}
	for _, bad := range []*SubscribeRequest{
		{Uid: "u", Cell: cellOf("1"), Future: 2 * time.Hour},
		{Uid: "u", Cell: deep},
		{Uid: "", Cell: cellOf("1")},
	} {
		if _, err := l.NewSubscription(bad, 1); !errors.Is(err, ErrBadRequest) {
			t.Fatalf("%+v accepted: %v", bad, err)
		}
	}
}

func TestClocksIncreaseStrictly(t *testing.T) {
	var c SystemClock
	c.AtLeast(time.Now().Add(time.Hour).UnixNano())
	prev := c.Now()
	for i := 0; i < 10000; i++ {
		n := c.Now()
		if n <= prev {
			t.Fatalf("stamp %d after %d", n, prev)
		}
		prev = n
	}
	f := NewFakeClock(5)
	if f.Now() != 6 || f.Now() != 7 || f.Peek() != 7 {
		t.Fatal("fake clock")
	}
}

// The oracle follows the rule in both arrival orders and honours cancels.
func TestOracleBothOrders(t *testing.T) {
	clock := NewFakeClock(1_000_000)
	o := NewOracle(clock, Limits{})
	ctx := context.Background()
	pub := &PublishRequest{Uid: "p", Cell: cellOf("1.4"), Expires: time.Minute, Desc: "x"}
	sub := &SubscribeRequest{Uid: "u", Cell: cellOf("1.4.2"), Past: time.Minute, Future: time.Minute}
	o.Publish(ctx, pub)
	r, _ := o.Subscribe(ctx, sub)
	if len(r.Past) != 1 {
		t.Fatalf("past publication not returned: %+v", r)
	}
	pr, _ := o.Publish(ctx, pub)
	if len(pr.Matches) != 1 || pr.Matches[0].Ts != r.Sub.Ts {
		t.Fatalf("future publication did not match: %+v", pr)
	}
	if err := o.Unsubscribe(ctx, r.Sub.Sid()); err != nil {
		t.Fatal(err)
	}
	if pr, _ := o.Publish(ctx, pub); len(pr.Matches) != 0 {
		t.Fatal("cancelled subscription matched")
	}
	if err := o.Unsubscribe(ctx, r.Sub.Sid()); !errors.Is(err, ErrUnknownSid) {
		t.Fatalf("second cancel: %v", err)
	}
}
