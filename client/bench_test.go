package client_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/seed84792017/cellcast/client"
)

// Notifications as the broker renders them: a publication with a
// description, and one with two attributes too.
var benchNotes = map[string]string{
	"plain": `{"op":"notification","sid":"dn0tjgthw7yv-1.4.2","seq":%d,"publication":{"pid":"dn0tjh1k2x3q-1.4.2.1.3","uid":"reporter","cell":"1.4.2.1.3","tp":"2026-11-21T10:32:12.123456789Z","expires_at":"2026-11-21T10:33:12.123456789Z","desc":"road closed at the corner"}}`,
	"attrs": `{"op":"notification","sid":"dn0tjgthw7yv-1.4.2","seq":%d,"publication":{"pid":"dn0tjh1k2x3q-1.4.2.1.3","uid":"reporter","cell":"1.4.2.1.3","tp":"2026-11-21T10:32:12.123456789Z","expires_at":"2026-11-21T10:33:12.123456789Z","desc":"road closed at the corner","attrs":{"category":"traffic","severity":"2"}}}`,
}

// noteServer answers a subscribe and then writes n notifications as fast
// as the connection takes them.
func noteServer(b *testing.B, n int, benchNote string) string {
	up := websocket.Upgrader{WriteBufferSize: 64 << 10}
	frames := make([][]byte, 1024)
	for i := range frames {
		frames[i] = fmt.Appendf(nil, benchNote, i+1)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		_, req, err := ws.ReadMessage()
		if err != nil {
			return
		}
		id := "1"
		if i := bytes.Index(req, []byte(`"id":"`)); i >= 0 {
			id = string(req[i+6 : i+6+bytes.IndexByte(req[i+6:], '"')])
		}
		ws.WriteMessage(websocket.TextMessage, []byte(`{"id":"`+id+`","op":"subscribed","sid":"dn0tjgthw7yv-1.4.2","cell":"1.4.2","ts":"2026-11-21T10:32:11Z","expires_at":"2099-01-01T00:00:00Z","live":true,"results":[]}`))
		for i := range n {
			// Rising seqs, so the client's dedupe keeps every one.
			f := frames[i%len(frames)]
			if i >= len(frames) {
				f = fmt.Appendf(f[:0:0], benchNote, i+1)
			}
			if ws.WriteMessage(websocket.TextMessage, f) != nil {
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
func BenchmarkNotifications(b *testing.B) {
	for _, kind := range []string{"plain", "attrs"} {
		b.Run(kind+"/client", func(b *testing.B) { benchClient(b, benchNotes[kind]) })
		b.Run(kind+"/gorilla", func(b *testing.B) { benchGorilla(b, benchNotes[kind]) })
	}
}

func benchClient(b *testing.B, note string) {
	url := noteServer(b, b.N, note)
	ctx := context.Background()
	c, err := client.Dial(ctx, url, client.Options{UID: "bench"})
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

func benchGorilla(b *testing.B, note string) {
	url := noteServer(b, b.N, note)
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	b.ResetTimer()
	ws.WriteMessage(websocket.TextMessage, []byte(`{"id":"1","op":"subscribe"}`))
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
