package client_test

import (
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/client"
)

// A client that asks for grouped notifications (the default) and one that
// asks for one frame each get the same notifications, each once, in every
// encoding: the oracle is the pairs of overlapping cells. Handlers get
// their own attributes, so one that changes them changes no other.
func TestGroupedNotificationsMatchSeparateOnes(t *testing.T) {
	_, url := running(t)
	ctx := ctxT(t)
	rng := rand.New(rand.NewSource(3))
	cell := func() string {
		parts := make([]string, 1+rng.Intn(4))
		for i := range parts {
			parts[i] = fmt.Sprint(1 + rng.Intn(2))
		}
		return strings.Join(parts, ".")
	}
	overlaps := func(a, b string) bool {
		return a == b || strings.HasPrefix(a, b+".") || strings.HasPrefix(b, a+".")
	}
	type got struct {
		mu   sync.Mutex
		pids map[string]map[string]int // by subscription cell#index, the pids heard
		n    int
	}
	var clients []*got
	var cells []string
	for range 30 {
		cells = append(cells, cell())
	}
	for _, o := range []client.Options{{}, {SeparateNotifications: true}, {Encoding: client.EncodingCBOR}, {Encoding: client.EncodingCBOR, SeparateNotifications: true}} {
		o.UID = "watcher"
		c, err := client.Dial(ctx, url, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		g := &got{pids: map[string]map[string]int{}}
		clients = append(clients, g)
		for i, cl := range cells {
			key := fmt.Sprint(cl, "#", i)
			g.pids[key] = map[string]int{}
			_, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Cell(cl), Future: time.Minute, Inline: true,
				Handler: func(n client.Notification) {
					g.mu.Lock()
					defer g.mu.Unlock()
					if n.Publication.Attrs["k"] != "v" {
						t.Errorf("%s: attrs %v", key, n.Publication.Attrs)
					}
					n.Publication.Attrs["k"] = "changed by " + key
					g.pids[key][n.Publication.Pid]++
					g.n++
				}})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	pub := dialT(t, url, "reporter")
	want := 0
	wantPids := map[string]map[string]int{}
	for i, cl := range cells {
		wantPids[fmt.Sprint(cl, "#", i)] = map[string]int{}
	}
	for range 40 {
		at := cell()
		p, err := pub.Publish(ctx, client.PublishRequest{Location: client.Cell(at), Expires: time.Minute, Desc: "incident", Attrs: map[string]string{"k": "v"}})
		if err != nil {
			t.Fatal(err)
		}
		for i, cl := range cells {
			if overlaps(cl, at) {
				wantPids[fmt.Sprint(cl, "#", i)][p.Pid] = 1
				want++
			}
		}
	}
	for ci, g := range clients {
		for end := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			g.mu.Lock()
			n := g.n
			g.mu.Unlock()
			if n >= want || time.Now().After(end) {
				break
			}
		}
		time.Sleep(100 * time.Millisecond) // one too many would come now
		g.mu.Lock()
		for key, w := range wantPids {
			if fmt.Sprint(g.pids[key]) != fmt.Sprint(w) {
				t.Errorf("client %d, subscription %s: heard %v, want %v", ci, key, g.pids[key], w)
			}
		}
		g.mu.Unlock()
	}
}
