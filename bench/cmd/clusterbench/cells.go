package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed84792017/cellcast/bench/places"
	"github.com/seed84792017/cellcast/bench/procs"
	"github.com/seed84792017/cellcast/client"
	"github.com/seed84792017/cellcast/cluster"
	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/geo"
	"github.com/seed84792017/cellcast/subscriptions"
)

// The cells workload's levels: subscriptions in cells of about 1.2 km,
// publications from about 10 km down to theirs, and one in 50 over about
// 40 km, above the default shard depth (S2 level 9), so it is stored in
// every geo shard and reaches many subscribers. About 48 notifications a
// publication over New York.
const (
	cellsSubLevel     = 13
	cellsPubMinLevel  = 10
	cellsShallowLevel = 8
	cellsShallowEvery = 50
)

// cellsWorkload is the default workload: subscriptions first, then
// publications, all on cells (no geometry: the cells alone decide), at
// population-weighted points over New York (bench/places).
type cellsWorkload struct {
	subs, pubs []string // cells
	subShard   []string // each subscription's shard in the cluster's layout
	owed       int64
}

// newWorkload draws the cells. Every publication is at or above the
// subscriptions' level, so a pair is owed when the publication's cell is
// an ancestor-or-self of the subscription's.
func newWorkload(nsubs, npubs int, seed int64, layout cluster.Shards) (*cellsWorkload, error) {
	ps, err := places.Load()
	if err != nil {
		return nil, err
	}
	sampler := places.NewSampler(ps)
	r := rand.New(rand.NewSource(seed))
	cell := func(level int) (dewey.ID, error) {
		lat, lng := sampler.Point(r)
		return geo.PointCell(lat, lng, level)
	}
	w := &cellsWorkload{}
	under := map[string]int64{} // subscriptions under (or at) each cell
	for range nsubs {
		id, err := cell(cellsSubLevel)
		if err != nil {
			return nil, err
		}
		w.subs = append(w.subs, id.String())
		w.subShard = append(w.subShard, layout.Home([]subscriptions.Cell{{NS: subscriptions.NSCell, ID: id}}))
		for d := 1; d <= len(id); d++ {
			under[id[:d].String()]++
		}
	}
	for range npubs {
		level := cellsPubMinLevel + r.Intn(cellsSubLevel-cellsPubMinLevel+1)
		if r.Intn(cellsShallowEvery) == 0 {
			level = cellsShallowLevel
		}
		id, err := cell(level)
		if err != nil {
			return nil, err
		}
		w.pubs = append(w.pubs, id.String())
		w.owed += under[id.String()]
	}
	return w, nil
}

func measure(nodes []*procs.Node, w *cellsWorkload, conns, window int) (result, error) {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var got atomic.Int64
	shardOf, names := indexShards(w.subShard)
	perShard := make([]atomic.Int64, len(names))
	var clients []*client.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	dial := func(i int) (*client.Client, error) {
		c, err := client.Dial(ctx, nodes[i%len(nodes)].WS(), client.Options{UID: "bench", Log: quiet, PendingLimit: 1 << 20})
		if err == nil {
			clients = append(clients, c)
		}
		return c, err
	}
	for i := range conns {
		c, err := dial(i)
		if err != nil {
			return result{}, err
		}
		for k := i; k < len(w.subs); k += conns {
			shard := &perShard[shardOf[k]]
			_, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Cell(w.subs[k]), Future: 10 * time.Minute, Inline: true,
				Handler: func(client.Notification) { got.Add(1); shard.Add(1) }})
			if err != nil {
				return result{}, err
			}
		}
	}
	var pubConns []*client.Client
	for i := range len(nodes) * 2 {
		c, err := dial(i)
		if err != nil {
			return result{}, err
		}
		pubConns = append(pubConns, c)
	}
	m, err := startMeter(nodes)
	if err != nil {
		return result{}, err
	}
	var next, refusals atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, len(pubConns)*window)
	for _, c := range pubConns {
		for range window {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					k := int(next.Add(1)) - 1
					if k >= len(w.pubs) {
						return
					}
					for {
						_, err := c.Publish(ctx, client.PublishRequest{Location: client.Cell(w.pubs[k]), Expires: 10 * time.Minute, Desc: "bench"})
						var ce *client.Error
						if errors.As(err, &ce) && ce.Code == "overloaded" {
							refusals.Add(1) // back-pressure: nothing stored; retry as told
							time.Sleep(ce.RetryAfter)
							continue
						}
						if err != nil {
							errs <- err
							return
						}
						break
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return result{}, err
	}
	for deadline := time.Now().Add(2 * time.Minute); got.Load() < w.owed && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	secs, cpu, err := m.stop()
	if err != nil {
		return result{}, err
	}
	time.Sleep(500 * time.Millisecond) // anything beyond what is owed
	r := result{seconds: secs, cpu: cpu, got: got.Load(), owed: w.owed, refused: refusals.Load()}
	m.messages(&r, len(w.pubs))
	delivered := map[string]int64{}
	for k, name := range names {
		delivered[name] = perShard[k].Load()
	}
	r.nodes = shares(nodes, delivered, m.written())
	if r.got != r.owed {
		return r, fmt.Errorf("%d notifications arrived, %d owed", r.got, r.owed)
	}
	return r, nil
}
