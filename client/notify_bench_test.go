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
