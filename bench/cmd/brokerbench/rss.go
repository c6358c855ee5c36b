package main

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed84792017/cellcast/client"
)

// rssRun stores -subs subscriptions and reports the broker's RSS with
// the clients connected (or, with -cycle, connecting one after another,
// so the subscriptions are stored but not routed), and after they leave.
func rssRun(b *brokerProc, w *workload, enc client.Encoding) error {
	bk := &book{errors: map[string]int{}}
	per := *nSubs / *subConns
	if *cycle > 0 {
		per = *cycle
	}
	var made atomic.Int64
	var next atomic.Int64 // subscriptions handed out
	var mu sync.Mutex
	var open []*conn
	t0 := time.Now()
	var wg sync.WaitGroup
	errc := make(chan error, *subConns)
	for g := range *subConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(*seed + int64(g)))
			for next.Load() < int64(*nSubs) {
				c, err := dial(b.addr, enc)
				if err != nil {
					errc <- err
					return
				}
				for range per {
					i := next.Add(1)
					if i > int64(*nSubs) {
						break
					}
					lat, lng := w.spot(rng)
					c.do(func(ctx context.Context) {
						_, err := c.c.Subscribe(ctx, client.SubscribeRequest{Location: client.Point(lat, lng), UID: "u" + strconv.FormatInt(i, 10),
							Future: time.Hour, Inline: true, Handler: func(client.Notification) {}})
						if err != nil {
							bk.fail(err)
						}
						if n := made.Add(1); n%1_000_000 == 0 {
							now, _ := b.rss()
							fmt.Fprintf(os.Stderr, "%d subscriptions, %.0f/s, RSS %.0f MiB\n", n, float64(n)/time.Since(t0).Seconds(), now)
						}
					})
				}
				c.drain()
				if *cycle > 0 {
					c.close()
					continue
				}
				mu.Lock()
				open = append(open, c)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
	}
	rate := float64(*nSubs) / time.Since(t0).Seconds()
	time.Sleep(2 * time.Second) // routes of cycled connections go
	connected, peak := b.rss()
	if *profile != "" {
		fetch(b.addr, "heap", *profile+".heap")
	}
	for _, c := range open {
		c.close()
	}
	time.Sleep(3 * time.Second)
	left, peak2 := b.rss()
	how := "connected"
	if *cycle > 0 {
		how = fmt.Sprintf("stored, clients cycled every %d", *cycle)
	}
	fmt.Printf("| stored live subscriptions | clients | subs/s | RSS MiB at the end | RSS MiB 3 s after clients left | peak MiB |\n|---|---|---|---|---|---|\n")
	fmt.Printf("| %d | %s | %.0f | %.0f | %.0f | %.0f |\n", *nSubs, how, rate, connected, left, max(peak, peak2))
	if len(bk.errors) > 0 {
		return fmt.Errorf("errors: %v", bk.errors)
	}
	return nil
}
