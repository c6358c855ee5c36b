package demo

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestServesThePage: the page, its bundle and its data are embedded and
// served with a policy that keeps the page on the broker's host.
func TestServesThePage(t *testing.T) {
	h := Handler()
	for path, want := range map[string]string{"/": "<title>Cellcast", "/app.js": "cellcast-token", "/ny.json": "Suffolk", "/places.json": "Brooklyn", "/world.json": "MultiLineString"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("%s: %d, body lacks %q", path, rec.Code, want)
		}
		if !strings.Contains(rec.Header().Get("Content-Security-Policy"), "default-src 'self'") {
			t.Errorf("%s: no CSP", path)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/nothing-here", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("a missing file: %d", rec.Code)
	}
}
