package gateway

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/gorilla/websocket"
)

// newUpgrader returns the WebSocket upgrader of a gateway whose pages may
// come from the allowed origins ("scheme://host[:port]", or "*" for any).
// A page of the broker's own origin is always allowed, and so is a client
// that sends no Origin (a program, not a browser): the check stops other
// sites' pages from using a visitor's browser against the broker.
//
// It reads through the HTTP server's own 4 KiB buffer (a zero
// ReadBufferSize) and takes a write buffer only while gorilla/websocket
// writes a message itself, which the broker never asks it to: the writer
// frames messages into pooled buffers (wswrite.go). An idle connection so
// holds no buffer of its own.
func newUpgrader(allowed []string) *websocket.Upgrader {
	u := &websocket.Upgrader{WriteBufferPool: &sync.Pool{}}
	if len(allowed) == 0 {
		return u // gorilla's default is the same-origin check
	}
	u.CheckOrigin = func(r *http.Request) bool {
		origin := r.Header.Get("Origin")
		if origin == "" || slices.Contains(allowed, "*") {
			return true
		}
		o, err := url.Parse(origin)
		if err != nil {
			return false
		}
		if strings.EqualFold(o.Host, r.Host) {
			return true
		}
		return slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(strings.TrimSuffix(a, "/"), origin) })
	}
	return u
}
