package broker

import (
	"net/http"
	"testing"

	"github.com/gorilla/websocket"
)

// TestWebSocketOrigins: a page of the broker's own origin, or a client
// with no Origin, may open a WebSocket; another site's page only when
// --allowed-origins names it.
func TestWebSocketOrigins(t *testing.T) {
	for _, tc := range []struct {
		allowed []string
		origin  string
		ok      bool
	}{
		{nil, "", true},
		{nil, "self", true},
		{nil, "http://evil.example", false},
		{[]string{"http://demo.example:3000"}, "http://demo.example:3000", true},
		{[]string{"http://demo.example:3000"}, "self", true},
		{[]string{"http://demo.example:3000"}, "http://evil.example", false},
		{[]string{"*"}, "http://evil.example", true},
	} {
		b := start(t, Config{AllowedOrigins: tc.allowed})
		h := http.Header{}
		switch tc.origin {
		case "":
		case "self":
			h.Set("Origin", "http://"+b.HTTPAddr())
		default:
			h.Set("Origin", tc.origin)
		}
		ws, resp, err := websocket.DefaultDialer.Dial("ws://"+b.HTTPAddr()+"/ws", h)
		if ok := err == nil; ok != tc.ok {
			t.Errorf("allowed %v, origin %q: connected %v, want %v (%v)", tc.allowed, tc.origin, ok, tc.ok, err)
		}
		if err == nil {
			ws.Close()
		} else if resp != nil && resp.StatusCode != http.StatusForbidden {
			t.Errorf("origin %q refused with %d, want 403", tc.origin, resp.StatusCode)
		}
		b.Shutdown(t.Context())
	}
}
