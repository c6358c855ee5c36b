package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/gorilla/websocket"

	"github.com/seed84792017/cellcast/client"
)

func dialEnc(t *testing.T, url, uid string, enc client.Encoding) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, url, client.Options{UID: uid, Encoding: enc, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestCBORClientMatchesJSON: against a real broker, a CBOR client and a
// JSON client subscribed alike receive the same past results, the same
// notifications in the same order, the same query results and the same
// errors.
func TestCBORClientMatchesJSON(t *testing.T) {
	_, url := running(t)
	ctx := ctxT(t)
	pub := dialEnc(t, url, "reporter", client.EncodingJSON)
	subs := map[string]*client.Client{"json": dialEnc(t, url, "a", client.EncodingJSON), "cbor": dialEnc(t, url, "b", client.EncodingCBOR)}

	r := rand.New(rand.NewPCG(7, 8))
	words := []string{"road", `"closed"`, `back\slash`, "é", "世界", "😀", "<&>", "tab\t"}
	publish := func(c *client.Client) *client.Published {
		req := client.PublishRequest{Expires: time.Minute, Desc: words[r.IntN(len(words))] + " " + words[r.IntN(len(words))]}
		// All in S2 face 4, cell 5, with New York.
		switch r.IntN(4) {
		case 0:
			req.Location = client.Cell(fmt.Sprintf("5.%d.%d", 1+r.IntN(4), 1+r.IntN(4)))
		case 1:
			req.Location = client.Point(40.6+r.Float64()/10, -74) // a whole longitude: an integer on the wire
		case 2:
			req.Location = client.Circle(40.7, -73.9+r.Float64()/10, float64(50+r.IntN(500)))
		default:
			lat, lng := 40.7+r.Float64()/10, -73.9-r.Float64()/10
			req.Location = client.Polygon(fmt.Appendf(nil, `{"type":"Polygon","coordinates":[[[%v,%v],[%v,%v],[-74,%v],[%v,%v]]]}`,
				lng, lat, lng+0.01, lat, lat+0.01, lng, lat))
		}
		if r.IntN(2) == 0 {
			req.Attrs = map[string]string{"category": words[r.IntN(len(words))], "n": fmt.Sprint(r.IntN(9))}
		}
		p, err := c.Publish(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for range 10 {
		publish(pub)
	}
	got := map[string]*client.Subscription{}
	for name, c := range subs {
		s, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Cell("5"), Past: time.Minute, Future: time.Minute})
		if err != nil {
			t.Fatal(name, err)
		}
		got[name] = s
	}
	if len(got["json"].Past) != 10 || !reflect.DeepEqual(got["json"].Past, got["cbor"].Past) {
		t.Fatalf("past results differ:\njson %+v\ncbor %+v", got["json"].Past, got["cbor"].Past)
	}
	var places, polygons int
	for _, p := range got["cbor"].Past {
		if p.At != nil {
			places++
		}
		if p.Polygon != nil {
			polygons++
		}
	}
	if places == 0 || polygons == 0 {
		t.Fatalf("%d points or circles and %d polygons among the past results: the test compares too little", places, polygons)
	}
	const n = 50
	for range n {
		publish(pub)
	}
	for i := range n {
		var want client.Notification
		for _, name := range []string{"json", "cbor"} {
			select {
			case note := <-got[name].C:
				note.Sid, note.Seq = "", 0 // each subscription numbers its own
				if name == "json" {
					want = note
				} else if !reflect.DeepEqual(note, want) {
					t.Fatalf("notification %d:\njson %+v\ncbor %+v", i, want, note)
				}
			case <-ctx.Done():
				t.Fatalf("%s: notification %d missing", name, i)
			}
		}
	}
	res := map[string]*client.Results{}
	for name, c := range subs {
		var err error
		if res[name], err = c.Query(ctx, client.QueryRequest{Attr: "uid", Eq: "reporter", K: 100}); err != nil {
			t.Fatal(err)
		}
	}
	if res["json"].Count != 60 || !reflect.DeepEqual(res["json"], res["cbor"]) {
		t.Fatalf("query results differ:\njson %+v\ncbor %+v", res["json"], res["cbor"])
	}
	// A publish from the CBOR client reaches the JSON subscriber as any other.
	p := publish(subs["cbor"])
	select {
	case note := <-got["json"].C:
		if note.Publication.Pid != p.Pid || note.Publication.Uid != "b" {
			t.Fatalf("notification %+v, want %s", note, p.Pid)
		}
	case <-ctx.Done():
		t.Fatal("no notification of the CBOR client's publication")
	}
	for name, c := range subs {
		_, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Cell("1.x"), Future: time.Minute})
		var e *client.Error
		if !errors.As(err, &e) || e.Code != "bad_request" {
			t.Fatalf("%s: bad cell gave %v", name, err)
		}
	}
	for name, s := range got {
		if err := s.Unsubscribe(ctx); err != nil {
			t.Fatal(name, err)
		}
	}
}

// TestSubprotocol: the raw handshake and frames. cellcast.cbor is chosen
// when asked for, a text request on it gets a CBOR error, and a client
// asking only for unknown subprotocols gets JSON without one.
func TestSubprotocol(t *testing.T) {
	_, url := running(t)
	d := websocket.Dialer{Subprotocols: []string{"cellcast.msgpack", "cellcast.cbor", "cellcast.json"}}
	ws, _, err := d.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if ws.Subprotocol() != "cellcast.cbor" {
		t.Fatalf("subprotocol %q", ws.Subprotocol())
	}
	ws.WriteMessage(websocket.TextMessage, []byte(`{"id":"1","op":"query"}`))
	mt, b, err := ws.ReadMessage()
	var rep map[string]any
	if err != nil || mt != websocket.BinaryMessage || cbor.Unmarshal(b, &rep) != nil || rep["op"] != "error" || rep["code"] != "bad_request" {
		t.Fatalf("text request on cellcast.cbor: %d %x %v %v", mt, b, rep, err)
	}
	req, _ := cbor.Marshal(map[string]any{"id": 9, "op": "query", "uid": "u", "attr": "uid", "eq": "nobody"})
	ws.WriteMessage(websocket.BinaryMessage, req)
	mt, b, err = ws.ReadMessage()
	rep = nil
	if err != nil || mt != websocket.BinaryMessage || cbor.Unmarshal(b, &rep) != nil || rep["op"] != "results" || rep["id"] != uint64(9) || rep["count"] != uint64(0) {
		t.Fatalf("CBOR query: %d %x %v %v", mt, b, rep, err)
	}

	d.Subprotocols = []string{"cellcast.msgpack"}
	ws2, _, err := d.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws2.Close()
	ws2.WriteMessage(websocket.TextMessage, []byte(`{"id":"1","op":"query","uid":"u","attr":"uid","eq":"x"}`))
	mt, b, err = ws2.ReadMessage()
	if ws2.Subprotocol() != "" || err != nil || mt != websocket.TextMessage || b[0] != '{' {
		t.Fatalf("unknown subprotocol: %q, %d %q %v", ws2.Subprotocol(), mt, b, err)
	}
}
