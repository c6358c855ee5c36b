package client

import (
	"log/slog"
	"net/http"
	"time"
)

// Options shape a Client. The zero value works against a broker in open
// mode.
type Options struct {
	// Token is sent as "Authorization: Bearer TOKEN" when set.
	Token string
	// UID names the user in every request: needed when the broker runs
	// open, and it may repeat the token's uid under auth.
	UID string
	// Header holds further handshake headers.
	Header http.Header
	// Fallback lists more WebSocket URLs of the same service (the other
	// nodes of a cluster): after a drop the client dials the next URL in
	// turn, so it reconnects to a live node and resumes there.
	Fallback []string
	// Encoding is the WebSocket connection's: EncodingJSON (the default)
	// or EncodingCBOR, cheaper for the client to decode. The broker must
	// speak cellcast.cbor for the latter, or Dial fails.
	Encoding Encoding
	// SeparateNotifications asks the broker for one WebSocket frame per
	// notification. By default the client asks for grouped frames: the
	// notifications of one publication to several of the connection's
	// subscriptions come in one frame, and the publication is decoded
	// once. Each handler still gets its own Notification.
	SeparateNotifications bool
	// MinBackoff and MaxBackoff bound the wait between reconnection
	// attempts, which doubles from the one to the other with jitter.
	// Defaults 50 ms and 5 s.
	MinBackoff, MaxBackoff time.Duration
	// WriteTimeout bounds one write; past it the connection counts as
	// dropped. Default 10 s.
	WriteTimeout time.Duration
	// EndGrace is how long after its window a subscription stays open for
	// notifications still on their way. Default 5 s.
	EndGrace time.Duration
	// PendingLimit bounds the notifications a subscription holds for a
	// reader of C or a Handler that has not taken them. Past it the
	// connection's reader waits, so the broker's queue fills and the
	// subscription falls behind and catches up from the store later
	// (docs/protocol.md, "Slow readers"). Default 65,536.
	PendingLimit int
	// NATSBuffer bounds the messages a NATS client holds unread; past it
	// NATS drops them, and the client resumes what it missed. Default
	// 65,536.
	NATSBuffer int
	// OnDisconnect, if set, hears why the connection dropped (a close
	// frame from the broker says so in its text), before the client
	// reconnects. It must not block.
	OnDisconnect func(error)
	// OnResume, if set, hears that the broker took the resume of a
	// subscription, after a drop or a gap (NATS): notifications follow
	// from after seq after. It runs on the connection's reader and must
	// not block.
	OnResume func(sid string, after int64)
	// Log receives reconnections and unexpected frames; default
	// slog.Default().
	Log *slog.Logger
}

func (o *Options) withDefaults() {
	if o.MinBackoff <= 0 {
		o.MinBackoff = 50 * time.Millisecond
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(5*time.Second, o.MinBackoff)
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.EndGrace <= 0 {
		o.EndGrace = 5 * time.Second
	}
	if o.PendingLimit <= 0 {
		o.PendingLimit = 1 << 16
	}
	if o.NATSBuffer <= 0 {
		o.NATSBuffer = 1 << 16
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
}

func (o *Options) header() http.Header {
	h := http.Header{}
	for k, v := range o.Header {
		h[k] = v
	}
	if o.Token != "" {
		h.Set("Authorization", "Bearer "+o.Token)
	}
	return h
}
