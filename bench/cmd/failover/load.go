package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand"
	"strings"
	"sync"
	"time"

	"github.com/seed84792017/cellcast/bench/procs"
	"github.com/seed84792017/cellcast/client"
)

// underLoad kills node victim while clients on every node subscribe and
// publish, and checks that every acknowledged publication reached every
// overlapping subscription exactly once: those of the killed node's
// clients too, which reconnect to the others and resume.
func underLoad(c *procs.Cluster, victim, nsubs, npubs int, log *slog.Logger) error {
	ctx := context.Background()
	var clients []*client.Client
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	for i, nd := range c.Nodes {
		var fallback []string
		for j, o := range c.Nodes {
			if j != i {
				fallback = append(fallback, o.WS())
			}
		}
		cl, err := client.Dial(ctx, nd.WS(), client.Options{UID: fmt.Sprintf("load%d", i), Fallback: fallback,
			MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Log: log})
		if err != nil {
			return err
		}
		clients = append(clients, cl)
	}
	r := rand.New(rand.NewSource(int64(victim)))
	cell := func(depth int) string {
		p := make([]string, depth)
		for i := range p {
			p[i] = fmt.Sprint(1 + r.Intn(4))
		}
		return strings.Join(p, ".")
	}
	type sub struct {
		cell string
		mu   sync.Mutex
		got  map[string]int
	}
	var subs []*sub
	for i := range nsubs {
		s := &sub{cell: cell(1 + r.Intn(5)), got: map[string]int{}}
		_, err := clients[i%len(clients)].Subscribe(ctx, client.SubscribeRequest{Location: client.Cell(s.cell), Future: 10 * time.Minute,
			Inline: true, Handler: func(n client.Notification) {
				s.mu.Lock()
				s.got[n.Publication.Desc]++
				s.mu.Unlock()
			}})
		if err != nil {
			return err
		}
		subs = append(subs, s)
	}
	var mu sync.Mutex
	acked := map[string]string{}
	refused := map[string]bool{}
	cells := make([]string, npubs)
	for i := range cells {
		cells[i] = cell(1 + r.Intn(5))
	}
	var wg sync.WaitGroup
	var killed time.Time
	start := time.Now()
	var killErr error
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := clients[w%len(clients)]
			for i := w; i < npubs; i += 6 {
				if w == 0 && i >= npubs/3 && killed.IsZero() {
					killed, killErr = time.Now(), c.Kill(victim)
				}
				desc := fmt.Sprintf("p%d", i)
				pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				_, err := cl.Publish(pctx, client.PublishRequest{Location: client.Cell(cells[i]), Expires: 10 * time.Minute, Desc: desc})
				cancel()
				mu.Lock()
				if err != nil {
					refused[desc] = true
				} else {
					acked[desc] = cells[i]
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if killErr != nil {
		return killErr
	}
	overlap := func(a, b string) bool {
		if len(a) > len(b) {
			a, b = b, a
		}
		return a == b || strings.HasPrefix(b, a+".")
	}
	var bad string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		bad = ""
		owed := 0
		for _, s := range subs {
			s.mu.Lock()
			for desc, at := range acked {
				if overlap(at, s.cell) {
					owed++
					if s.got[desc] != 1 {
						bad = fmt.Sprintf("subscription at %s got %s (at %s) %d times", s.cell, desc, at, s.got[desc])
					}
				}
			}
			for desc, k := range s.got {
				if _, ok := acked[desc]; (!ok && !refused[desc]) || k > 1 {
					bad = fmt.Sprintf("subscription at %s got %s %d times", s.cell, desc, k)
				}
			}
			s.mu.Unlock()
		}
		if bad == "" {
			if killed.IsZero() {
				return fmt.Errorf("the node was never killed")
			}
			fmt.Printf("under load: killed %s %v into the run; %d publications acknowledged, %d refused while shards moved; all %d notifications owed arrived exactly once\n",
				c.Nodes[victim].ID, killed.Sub(start).Round(time.Millisecond), len(acked), len(refused), owed)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("completeness after kill -9: %s", bad)
		}
	}
}
