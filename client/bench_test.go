package client_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/gorilla/websocket"

	"github.com/seed84792017/cellcast/client"
)

// Notifications as the broker renders them: a publication with a
// description, and one with two attributes too.
var benchNotes = map[string]string{
	"plain": `{"op":"notification","sid":"dn0tjgthw7yv-1.4.2","seq":%d,"publication":{"pid":"dn0tjh1k2x3q-1.4.2.1.3","uid":"reporter","cell":"1.4.2.1.3","tp":"2026-11-21T10:32:12.123456789Z","expires_at":"2026-11-21T10:33:12.123456789Z","desc":"road closed at the corner"}}`,
	"attrs": `{"op":"notification","sid":"dn0tjgthw7yv-1.4.2","seq":%d,"publication":{"pid":"dn0tjh1k2x3q-1.4.2.1.3","uid":"reporter","cell":"1.4.2.1.3","tp":"2026-11-21T10:32:12.123456789Z","expires_at":"2026-11-21T10:33:12.123456789Z","desc":"road closed at the corner","attrs":{"category":"traffic","severity":"2"}}}`,
}

// asCBOR renders a JSON frame in CBOR as the broker does: the same
// value, its fields in the same order (json.Decoder's tokens), and whole
// numbers as integers.
func asCBOR(b *testing.B, frame []byte) []byte {
	d := json.NewDecoder(bytes.NewReader(frame))
	d.UseNumber()
	var value func() any
	value = func() any {
		tok, err := d.Token()
		if err != nil {
			b.Fatal(err)
		}
		switch x := tok.(type) {
		case json.Delim: // '{': the only container in a notification
			var m []any // key, value, …
			for d.More() {
				k, _ := d.Token()
				m = append(m, k, value())
			}
			d.Token()
			return orderedMap(m)
		case json.Number:
			n, err := x.Int64()
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
		return tok
	}
	out, err := cbor.Marshal(value())
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// orderedMap is a CBOR map whose keys keep their order.
type orderedMap []any

func (m orderedMap) MarshalCBOR() ([]byte, error) {
	out := []byte{0xa0 | byte(len(m)/2)}
	for _, x := range m {
		b, err := cbor.Marshal(x)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}

// noteServer answers a subscribe and then writes n notifications as fast
// as the connection takes them, in CBOR when the client asks for it.
func noteServer(b *testing.B, n int, benchNote string) string {
	up := websocket.Upgrader{WriteBufferSize: 64 << 10, Subprotocols: []string{"cellcast.cbor"}}
	// Frames are rendered from templates around the seq, which rises
	// (the client drops what it has seen): JSON's digits, CBOR's eight
	// bytes (a longer head than the broker's, which decoders take).
	pre, post, _ := strings.Cut(benchNote, "%d")
	cb := asCBOR(b, []byte(pre+"1099511627776"+post))
	at := bytes.Index(cb, []byte("\x63seq\x1b")) + 5
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		mt, req, err := ws.ReadMessage()
		if err != nil {
			return
		}
		id := "1"
		if mt == websocket.BinaryMessage {
			var r struct{ ID string }
			cbor.Unmarshal(req, &r)
			id = r.ID
		} else if i := bytes.Index(req, []byte(`"id":"`)); i >= 0 {
			id = string(req[i+6 : i+6+bytes.IndexByte(req[i+6:], '"')])
		}
		reply := []byte(`{"id":"` + id + `","op":"subscribed","sid":"dn0tjgthw7yv-1.4.2","cell":"1.4.2","ts":"2026-11-21T10:32:11Z","expires_at":"2099-01-01T00:00:00Z","live":true}`)
		var buf []byte
		frame := func(i int) []byte {
			buf = append(strconv.AppendInt(append(buf[:0], pre...), int64(i), 10), post...)
			return buf
		}
		if mt == websocket.BinaryMessage {
			reply = asCBOR(b, reply)
			frame = func(i int) []byte {
				binary.BigEndian.PutUint64(cb[at:], uint64(i))
				return cb
			}
		}
		ws.WriteMessage(mt, reply)
		for i := range n {
			if ws.WriteMessage(mt, frame(i+1)) != nil {
				return
			}
		}
		ws.ReadMessage() // until the client goes
	}))
	b.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

// BenchmarkNotifications: the cost of one notification to a client
// connection, the Go client (decoding every field) against a bare
// gorilla/websocket reader of the same frames (decoding nothing). The
// server's rendering is in both; compare the two ns/op.
//
// With /cbor the same notifications come as cellcast.cbor frames; the
// gorilla reader of those reads the CBOR frames.
func BenchmarkNotifications(b *testing.B) {
	for _, kind := range []string{"plain", "attrs"} {
		for _, enc := range []client.Encoding{client.EncodingJSON, client.EncodingCBOR} {
			name := kind + "/" + map[client.Encoding]string{client.EncodingJSON: "json", client.EncodingCBOR: "cbor"}[enc]
			b.Run(name+"/client", func(b *testing.B) { benchClient(b, benchNotes[kind], enc) })
			b.Run(name+"/gorilla", func(b *testing.B) { benchGorilla(b, benchNotes[kind], enc) })
		}
	}
}

func benchClient(b *testing.B, note string, enc client.Encoding) {
	url := noteServer(b, b.N, note)
	ctx := context.Background()
	c, err := client.Dial(ctx, url, client.Options{UID: "bench", Encoding: enc})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	done := make(chan struct{})
	got := 0
	b.ResetTimer()
	_, err = c.Subscribe(ctx, client.SubscribeRequest{Location: client.Cell("1.4.2"), Future: time.Hour, Inline: true,
		Handler: func(n client.Notification) {
			if got++; got == b.N {
				close(done)
			}
		}})
	if err != nil {
		b.Fatal(err)
	}
	<-done
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "notifications/s")
}

func benchGorilla(b *testing.B, note string, enc client.Encoding) {
	url := noteServer(b, b.N, note)
	d := *websocket.DefaultDialer
	mt, req := websocket.TextMessage, []byte(`{"id":"1","op":"subscribe"}`)
	if enc == client.EncodingCBOR {
		d.Subprotocols = []string{"cellcast.cbor"}
		mt, req = websocket.BinaryMessage, asCBOR(b, req)
	}
	ws, _, err := d.Dial(url, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	b.ResetTimer()
	ws.WriteMessage(mt, req)
	var buf bytes.Buffer
	for range b.N + 1 { // the reply, then the notifications
		_, r, err := ws.NextReader()
		if err != nil {
			b.Fatal(err)
		}
		buf.Reset()
		buf.ReadFrom(r)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "notifications/s")
}
