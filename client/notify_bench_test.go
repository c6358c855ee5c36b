package client

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkNotify: the client's whole path for one notification frame,
// from the bytes read to an inline handler, without the network.
func BenchmarkNotify(b *testing.B) {
	opts := Options{}
	opts.withDefaults()
	c := newClient("", opts)
	s := newSubscription(c, &SubscribeRequest{Inline: true, Handler: func(Notification) {}}, "u")
	s.Sid, s.ExpiresAt = "dn0tjgthw7yv-1.4.2", time.Now().Add(time.Hour)
	c.subs[s.Sid] = s
	frames := make([][]byte, 1024)
	for i := range frames {
		frames[i] = fmt.Appendf(nil, `{"op":"notification","sid":"dn0tjgthw7yv-1.4.2","seq":%d,"publication":{"pid":"dn0tjh1k2x3q-1.4.2.1.3","uid":"reporter","cell":"1.4.2.1.3","tp":"2026-11-21T10:32:12.123456789Z","expires_at":"2026-11-21T10:33:12.123456789Z","desc":"incident"}}`, i+1)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i%len(frames) == 0 {
			s.last.Store(0)
		}
		c.frame(nil, frames[i%len(frames)])
		i++
	}
}

// TestRouteForgetsEndedSubscription: the reader's memory of the last
// subscription it routed to does not outlive the subscription, and two
// subscriptions in turn each get their own notifications.
func TestRouteForgetsEndedSubscription(t *testing.T) {
	opts := Options{}
	opts.withDefaults()
	c := newClient("", opts)
	got := map[string][]int64{}
	sub := func(sid string) *Subscription {
		s := newSubscription(c, &SubscribeRequest{Inline: true, Handler: func(n Notification) { got[n.Sid] = append(got[n.Sid], n.Seq) }}, "u")
		s.Sid, s.ExpiresAt = sid, time.Now().Add(time.Hour)
		c.subs[sid] = s
		return s
	}
	a, _ := sub("s-a"), sub("s-b")
	note := func(sid string, seq int) {
		c.frame(nil, fmt.Appendf(nil, `{"op":"notification","sid":"%s","seq":%d,"publication":{"pid":"p%d","tp":"2026-11-21T10:32:12Z"}}`, sid, seq, seq))
	}
	note("s-a", 1)
	note("s-b", 1)
	note("s-a", 2)
	c.end(a, ErrCancelled)
	note("s-a", 3)
	note("s-b", 2)
	if want := map[string][]int64{"s-a": {1, 2}, "s-b": {1, 2}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
	if o := c.stats.orphans.Load(); o != 1 {
		t.Fatalf("%d orphans, want the one after the end", o)
	}
}
