package gateway

import (
	"time"

	"github.com/gorilla/websocket"
)

// closePolicy closes a connection whose token expired or was revoked.
const closePolicy = websocket.ClosePolicyViolation

// watchToken closes the connection with a policy close frame when its
// token expires at t (never for a zero time), and at once if the verifier
// refuses it by now: a connection that joined g.conns after a reload's
// Reverify looked must still meet the new tokens. The returned stop
// cancels the timer.
func (c *wsConn) watchToken(t time.Time) (stop func()) {
	if c.g.cfg.Auth != nil {
		if id, err := c.g.cfg.Auth.Verify(c.tok); err != nil || id.UID != c.user {
			c.close(closePolicy, "token revoked", false)
		}
	}
	if t.IsZero() {
		return func() {}
	}
	timer := time.AfterFunc(time.Until(t), func() {
		c.close(closePolicy, "token expired; reconnect with a fresh token", false)
	})
	return func() { timer.Stop() }
}

// Reverify checks again the token of every WebSocket connection, after
// the verifier changed (token files reloaded), and closes those whose
// token it now refuses with a policy close frame. It returns how many it
// closed.
func (g *Gateway) Reverify() int {
	if g.cfg.Auth == nil {
		return 0
	}
	g.mu.Lock()
	conns := make([]*wsConn, 0, len(g.conns))
	for c := range g.conns {
		conns = append(conns, c)
	}
	g.mu.Unlock()
	n := 0
	for _, c := range conns {
		if id, err := g.cfg.Auth.Verify(c.tok); err != nil || id.UID != c.user {
			c.close(closePolicy, "token revoked", false)
			n++
		}
	}
	return n
}
