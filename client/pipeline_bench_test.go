package client_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/seed84792017/cellcast/client"
)

// BenchmarkPipelinedPublish publishes from 16 goroutines at once over one
// connection to a server that answers each publish as soon as it reads
// it: what the client's writes cost when requests are in flight together.
// writes/op counts the process's write system calls (/proc/self/io),
// the server's reply included.
func BenchmarkPipelinedPublish(b *testing.B) {
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		var reply []byte
		for {
			_, req, err := ws.ReadMessage()
			if err != nil {
				return
			}
			i := bytes.Index(req, []byte(`"id":"`)) + 6
			id := req[i : i+bytes.IndexByte(req[i:], '"')]
			reply = append(append(append(reply[:0], `{"id":"`...), id...), `","op":"published","pid":"dn0tjh1k2x3q-1.4.2.1.3","matched":0}`...)
			if ws.WriteMessage(websocket.TextMessage, reply) != nil {
				return
			}
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	c, err := client.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), client.Options{UID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	const senders = 16
	var wg sync.WaitGroup
	w0 := writeCalls(b)
	b.ResetTimer()
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := s; i < b.N; i += senders {
				if _, err := c.Publish(ctx, client.PublishRequest{Location: client.Cell("1.4.2.1.3"), Expires: time.Minute, Desc: "road closed at the corner"}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(writeCalls(b)-w0)/float64(b.N), "writes/op")
}

// writeCalls is how many write system calls the process has made.
func writeCalls(b *testing.B) int64 {
	raw, err := os.ReadFile("/proc/self/io")
	if err != nil {
		b.Skip("no /proc/self/io:", err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "syscw: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Skip("no syscw in /proc/self/io")
	return 0
}
