package broker

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/gateway"
	"github.com/seed84792017/cellcast/listdb"
)

// TestPipeliningReaderIsSlowedNeverCut: with a small reply budget and
// send queue, a client sends 38 subscribes at once, each with pages of
// past results (each as its own user: a user holds at most 16 cursors),
// and reads everything, slowly but without stopping. It
// must get every reply and every page (pushed, or pulled with the
// cursor when they did not fit), and never be cut for "not reading".
func TestPipeliningReaderIsSlowedNeverCut(t *testing.T) {
	b := start(t, Config{Durability: listdb.Written, Gateway: gateway.Limits{ReplyBudget: 2048, SendQueueBytes: 16384}})
	pub := dial(t, b, nil)
	const pubs = 60
	for i := range pubs {
		wantOp(t, pub.do(msg{"op": "publish", "uid": "pete", "cell": "1.7.2", "expires": "1h", "desc": fmt.Sprintf("%03d %s", i, strings.Repeat("x", 200))}), "published")
	}
	ws := rawDial(t, b)
	const subs = 38
	for i := range subs {
		if err := ws.WriteJSON(msg{"op": "subscribe", "id": fmt.Sprint(i), "uid": fmt.Sprint("sue", i), "cell": "1.7", "past": "1h", "future": "1h"}); err != nil {
			t.Fatal(err)
		}
	}
	read := func() msg {
		t.Helper()
		ws.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, data, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("the reading client was cut: %v", err)
		}
		time.Sleep(200 * time.Microsecond) // a slow reader, but one that reads
		var m msg
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	got := map[string]int{} // request id → past results seen
	pending := subs
	for pending > 0 {
		m := read()
		id, _ := m["id"].(string)
		switch m["op"] {
		case "subscribed", "page":
			if m["op"] == "page" && m["of"] != "subscribed" {
				t.Fatalf("page of %v", m["of"])
			}
			got[id] += len(m["results"].([]any))
			if next, ok := m["next"].(string); ok {
				if err := ws.WriteJSON(msg{"op": "page", "uid": "sue" + id, "cursor": next}); err != nil {
					t.Fatal(err)
				}
			} else if m["more"] != true {
				pending--
			}
		case "error":
			t.Fatalf("error: %v", m)
		}
	}
	for i := range subs {
		if n := got[fmt.Sprint(i)]; n != pubs {
			t.Fatalf("subscribe %d got %d past results, want %d", i, n, pubs)
		}
	}
}
