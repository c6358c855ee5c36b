package broker

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/gorilla/websocket"
)

// The handshake takes notifications=grouped and refuses any other value
// with 400 and a bad_request error; the broker keeps serving.
func TestGroupedNotificationsHandshake(t *testing.T) {
	b := start(t, Config{})
	url := "ws://" + b.HTTPAddr() + "/ws"
	for _, v := range []string{"separate", "GROUPED", "grouped,cbor"} {
		_, resp, err := websocket.DefaultDialer.Dial(url+"?notifications="+v, nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("notifications=%s: %v, %+v", v, err, resp)
		}
		body, _ := io.ReadAll(resp.Body)
		var e struct{ Op, Code, Message string }
		if json.Unmarshal(body, &e) != nil || e.Op != "error" || e.Code != "bad_request" {
			t.Fatalf("refusal body %q", body)
		}
	}
	ws, _, err := websocket.DefaultDialer.Dial(url+"?notifications=grouped", nil)
	if err != nil {
		t.Fatal(err)
	}
	ws.Close()
}
