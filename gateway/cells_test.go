package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/seed84792017/cellcast/geo"
)

func TestServeCells(t *testing.T) {
	get := func(query string) (int, map[string]any) {
		rec := httptest.NewRecorder()
		ServeCells(rec, httptest.NewRequest(http.MethodGet, "/cells?"+query, nil))
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%s: %v: %s", query, err, rec.Body)
		}
		return rec.Code, body
	}
	id, _ := geo.PointCell(40.758, -73.9855, 14)
	code, fc := get("ids=" + id.String() + ",1")
	features, _ := fc["features"].([]any)
	if code != 200 || len(features) != 2 {
		t.Fatalf("%d %v", code, fc)
	}
	f := features[0].(map[string]any)
	ring := f["geometry"].(map[string]any)["coordinates"].([]any)[0].([]any)
	if f["properties"].(map[string]any)["id"] != id.String() || len(ring) != 5 {
		t.Fatalf("feature %v", f)
	}
	// The cell's corners surround Times Square.
	var minLat, maxLat, minLng, maxLng = 90.0, -90.0, 180.0, -180.0
	for _, p := range ring {
		lng, lat := p.([]any)[0].(float64), p.([]any)[1].(float64)
		minLat, maxLat, minLng, maxLng = min(minLat, lat), max(maxLat, lat), min(minLng, lng), max(maxLng, lng)
	}
	if !(minLat < 40.758 && 40.758 < maxLat && minLng < -73.9855 && -73.9855 < maxLng) {
		t.Fatalf("ring %v misses its point", ring)
	}
	if code, fc := get("box=40.7,-74.02,40.8,-73.93&level=13"); code != 200 || len(fc["features"].([]any)) < 20 {
		t.Fatalf("box: %d %v", code, len(fc["features"].([]any)))
	}
	for _, bad := range []string{"", "ids=9.9", "ids=1.x", "box=1,2,3&level=4", "box=0,0,10,10&level=20", "box=0,0,1,1&level=x"} {
		if code, body := get(bad); code != 400 || body["code"] != "bad_request" {
			t.Errorf("%q: %d %v", bad, code, body)
		}
	}
}
