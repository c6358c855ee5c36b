package gateway

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/seed84792017/cellcast/dualdb"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/service"
	"github.com/seed84792017/cellcast/subscriptions"
)

// newTestService is a service over a store in a temporary directory, on
// the world grid; the test's end closes it.
func newTestService(t *testing.T) (*service.Service, *Locator) {
	t.Helper()
	store, err := dualdb.Open(filepath.Join(t.TempDir(), "db"), listdb.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	loc, _ := NewLocator(Grid{}, nil)
	svc := service.New(service.Config{Store: store, Encode: loc.EncodePublication})
	t.Cleanup(func() { svc.Close() })
	return svc, loc
}

// stuckCore is a service whose publishes take their stamp, then wait
// until their context ends.
type stuckCore struct {
	*service.Service
	entered  chan struct{}
	returned chan error
}

func (c *stuckCore) Publish(ctx context.Context, req *subscriptions.PublishRequest, _ func(*subscriptions.PublishResult)) error {
	close(c.entered)
	req.Stamped.Mark()
	<-ctx.Done()
	c.returned <- ctx.Err()
	return ctx.Err()
}

// TestCloseOutOfTimeStopsRequestsFirst: a Close whose deadline passes
// while a request still runs tells the request to stop, and returns only
// once it has: its caller may then close the store.
func TestCloseOutOfTimeStopsRequestsFirst(t *testing.T) {
	svc, loc := newTestService(t)
	core := &stuckCore{Service: svc, entered: make(chan struct{}), returned: make(chan error, 1)}
	g := New(Config{Service: core, Locator: loc})
	go func() {
		r := httptest.NewRequest("POST", "/api/publish", bytes.NewReader([]byte(`{"uid":"u","cell":"1","expires":"1m"}`)))
		r.SetPathValue("op", "publish")
		g.ServeHTTP(httptest.NewRecorder(), r)
	}()
	select {
	case <-core.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the publish never reached the service")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := g.Close(ctx); err == nil {
		t.Fatal("Close reported a clean drain while a request was stuck")
	}
	select {
	case err := <-core.returned:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the request ended with %v, want its context cancelled", err)
		}
	default:
		t.Fatal("Close returned while the request still ran")
	}
}

// TestHungUpConnectionEndsItsRequests: a request's context ends with its
// connection, on WebSocket and on HTTP: what it waits for stops once its
// reply can no longer reach the client.
func TestHungUpConnectionEndsItsRequests(t *testing.T) {
	svc, loc := newTestService(t)
	for _, transport := range []string{"ws", "http"} {
		core := &stuckCore{Service: svc, entered: make(chan struct{}), returned: make(chan error, 1)}
		g := New(Config{Service: core, Locator: loc})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if transport == "ws" {
				g.ServeWS(w, r)
				return
			}
			r.SetPathValue("op", "publish")
			g.ServeHTTP(w, r)
		}))
		body := `{"uid":"u","cell":"1","expires":"1m"}`
		var hangUp func()
		if transport == "ws" {
			c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.WriteMessage(websocket.TextMessage, []byte(`{"id":"1","op":"publish",`+body[1:])); err != nil {
				t.Fatal(err)
			}
			hangUp = func() { c.Close() }
		} else {
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/api/publish", strings.NewReader(body))
			go http.DefaultClient.Do(req)
			hangUp = cancel
		}
		select {
		case <-core.entered:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the publish never reached the service", transport)
		}
		hangUp()
		select {
		case err := <-core.returned:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("%s: the request ended with %v, want its context cancelled", transport, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the request still runs after its client hung up", transport)
		}
		srv.Close()
		g.Close(context.Background())
	}
}
