package broker

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestPublicationStormIsRefusedNotQueued: publishers on WebSocket, HTTP
// and NATS send far more than delivery may hold (each publication owes
// more notifications than the backlog bound). Some are refused with
// overloaded and a retry hint on every transport; every accepted one
// reaches every live subscription exactly once; the backlog stays near
// its bound. The oracle is the set of pids the broker acknowledged.
func TestPublicationStormIsRefusedNotQueued(t *testing.T) {
	const maxBacklog = 100
	b := start(t, Config{MaxBacklog: maxBacklog})
	const perConn = 60 // subscriptions on each reading connection
	readers := []*client{dial(t, b, nil), dial(t, b, nil)}
	sids := map[string]bool{}
	for i, r := range readers {
		for j := range perConn {
			s := r.do(msg{"op": "subscribe", "uid": fmt.Sprint("r", i, "-", j), "cell": "1", "future": "5m"})
			wantOp(t, s, "subscribed")
			sids[s["sid"].(string)] = true
		}
	}
	var maxSeen atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n := b.svc.Stats().Backlog; n > maxSeen.Load() {
				maxSeen.Store(n)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()

	var mu sync.Mutex
	var accepted []string
	refused := map[string]int{}
	note := func(transport string, m msg) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case m["op"] == "published":
			accepted = append(accepted, m["pid"].(string))
		case m["code"] == "overloaded":
			if ms, _ := m["retry_after_ms"].(float64); ms <= 0 {
				return fmt.Errorf("%s: overloaded without a retry hint: %v", transport, m)
			}
			refused[transport]++
		default:
			return fmt.Errorf("%s: %v", transport, m)
		}
		return nil
	}
	body := func(rng *rand.Rand) string {
		return fmt.Sprintf(`{"uid":"p","cell":"1.%d","expires":"5m","desc":"storm"}`, 1+rng.Intn(4))
	}
	var wg, side sync.WaitGroup
	errs := make(chan error, 16)
	// WebSocket publishers pipeline bursts until the HTTP and NATS ones,
	// which send one request at a time, have each been refused a few times.
	var sideDone atomic.Bool
	for w := range 3 {
		ws, _, err := websocketDial("ws://" + b.HTTPAddr() + "/ws")
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			const burst = 100
			for i := 0; i < 100 && (i < 3 || !sideDone.Load()); i++ {
				for j := range burst {
					if err := ws.WriteMessage(1, []byte(strings.Replace(body(rng), "{", fmt.Sprintf(`{"id":"%d","op":"publish",`, j), 1))); err != nil {
						errs <- err
						return
					}
				}
				for range burst {
					var m msg
					if err := ws.ReadJSON(&m); err != nil {
						errs <- err
						return
					}
					if err := note("ws", m); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	refusedOn := func(tr string) int {
		mu.Lock()
		defer mu.Unlock()
		return refused[tr]
	}
	// enough: at least n requests, and refused a few times, within a cap.
	enough := func(tr string, n int) bool { return n >= 2000 || (n >= 50 && refusedOn(tr) >= 3) }
	side.Add(1)
	go func() { // HTTP: 429 or 503 with Retry-After
		defer side.Done()
		rng := rand.New(rand.NewSource(10))
		for n := 0; !enough("http", n); n++ {
			resp, err := http.Post("http://"+b.HTTPAddr()+"/api/publish", "application/json", strings.NewReader(body(rng)))
			if err != nil {
				errs <- err
				return
			}
			var m msg
			err = json.NewDecoder(resp.Body).Decode(&m)
			resp.Body.Close()
			if err == nil && m["code"] == "overloaded" && (resp.Header.Get("Retry-After") == "" || (resp.StatusCode != 429 && resp.StatusCode != 503)) {
				err = fmt.Errorf("HTTP overloaded answered %d with Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
			}
			if err == nil {
				err = note("http", m)
			}
			if err != nil {
				errs <- err
				return
			}
		}
	}()
	nc, err := nats.Connect(b.NATSURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	side.Add(1)
	go func() { // NATS requests
		defer side.Done()
		rng := rand.New(rand.NewSource(11))
		for n := 0; !enough("nats", n); n++ {
			r, err := nc.Request("cellcast.publish", []byte(body(rng)), 10*time.Second)
			var m msg
			if err == nil {
				err = json.Unmarshal(r.Data, &m)
			}
			if err == nil {
				err = note("nats", m)
			}
			if err != nil {
				errs <- err
				return
			}
		}
	}()
	side.Wait()
	sideDone.Store(true)
	wg.Wait()
	close(stop)
	<-sampled
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, tr := range []string{"ws", "http", "nats"} {
		if refused[tr] == 0 {
			t.Errorf("no %s publish was refused (refused: %v, accepted %d)", tr, refused, len(accepted))
		}
	}
	if len(accepted) == 0 {
		t.Fatal("nothing was accepted")
	}
	// The bound holds but for what publications admitted at the same
	// moment owe: at most one each per publishing client.
	if m := maxSeen.Load(); m > maxBacklog+5*2*perConn {
		t.Errorf("the backlog reached %d notifications, bound %d", m, maxBacklog)
	}
	b.svc.Drain()
	slices.Sort(accepted)
	for _, r := range readers {
		got := map[string][]string{}
		for _, n := range r.wait(perConn * len(accepted)) {
			sid := n["sid"].(string)
			if !sids[sid] {
				t.Fatalf("a notification for %s, not a subscription of this test", sid)
			}
			got[sid] = append(got[sid], n["publication"].(msg)["pid"].(string))
		}
		r.quiet()
		for sid, pids := range got {
			slices.Sort(pids)
			if !slices.Equal(pids, accepted) {
				t.Fatalf("%s got %d notifications, %d accepted publications: not exactly once each", sid, len(pids), len(accepted))
			}
		}
		if len(got) != perConn {
			t.Fatalf("%d of %d subscriptions were notified", len(got), perConn)
		}
	}
	t.Logf("accepted %d, refused %v, backlog peak %d", len(accepted), refused, maxSeen.Load())
}
