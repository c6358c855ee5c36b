package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/lsm/vfs"
)

// TestShutdownUnderLoadRunsNothingAfterTheStore: clients keep publishing
// and subscribing while the broker shuts down with no time to drain (a
// deadline already past); every request either completes or is refused
// as unavailable, and none meets a closed store (an internal error).
func TestShutdownUnderLoadRunsNothingAfterTheStore(t *testing.T) {
	// A slow disk keeps requests in flight, waiting for their fsync.
	slow := vfs.Inject(vfs.Default, func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.HasSuffix(path, ".log") {
			time.Sleep(200 * time.Millisecond)
		}
		return nil
	})
	var logged syncBuffer
	b := start(t, Config{FS: slow, Log: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelError}))})
	var internal, answered atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 8 {
		ws, _, err := websocketDial("ws://" + b.HTTPAddr() + "/ws")
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(2)
		go func() { // reader
			defer wg.Done()
			for {
				_, data, err := ws.ReadMessage()
				if err != nil {
					return
				}
				var m msg
				if json.Unmarshal(data, &m) == nil && m["op"] != "notification" {
					answered.Add(1)
					if m["code"] == "internal" {
						internal.Add(1)
						t.Logf("worker %d: %s", w, data)
					}
				}
			}
		}()
		go func() { // writer
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					ws.Close()
					return
				default:
				}
				op := msg{"id": i, "op": "publish", "uid": fmt.Sprint("w", w), "cell": fmt.Sprintf("%d.%d", 1+w%6, 1+i%4), "expires": "1m"}
				if i%3 == 0 {
					op = msg{"id": i, "op": "subscribe", "uid": fmt.Sprint("w", w), "cell": fmt.Sprint(1 + w%6), "past": "1m", "future": "1m"}
				}
				if ws.WriteJSON(op) != nil {
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	b.Shutdown(ctx) // may report what it could not drain in time
	close(stop)
	wg.Wait()
	if answered.Load() == 0 {
		t.Fatal("no request was answered: the load never ran")
	}
	if n := internal.Load(); n != 0 {
		t.Fatalf("%d requests met the closed store (internal), of %d answered", n, answered.Load())
	}
	if strings.Contains(logged.String(), "storage failure") {
		t.Fatalf("requests ran into the closed store:\n%s", logged.String())
	}
}

// syncBuffer is a log's destination that goroutines share.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
