package gateway

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/gorilla/websocket"
)

// newUpgrader returns the WebSocket upgrader of a gateway whose pages may
// come from the allowed origins ("scheme://host[:port]", or "*" for any).
// A page of the broker's own origin is always allowed, and so is a client
// that sends no Origin (a program, not a browser): the check stops other
// sites' pages from using a visitor's browser against the broker.
func newUpgrader(allowed []string) *websocket.Upgrader {
	u := &websocket.Upgrader{ReadBufferSize: 16 << 10, WriteBufferSize: 64 << 10}
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
