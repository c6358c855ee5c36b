package demo

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var static embed.FS

// csp keeps the page on the broker's own host: scripts, styles, data and
// the WebSocket ('self' covers ws: and wss: of the same host).
const csp = "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'"

// Handler serves the page and its data.
func Handler() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		// The embed pattern above guarantees the directory exists.
		panic(err)
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		// Embedded files carry no dates: revalidate, so a new binary's
		// page is never mixed with an old cached bundle.
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
