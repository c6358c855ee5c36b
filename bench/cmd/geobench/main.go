// Command geobench measures geospatial alerting end to end: circles over
// New York City against a broker in its own process, each match checked
// against exact great-circle geometry.
//
// Subscribers: -subs circles of radius 200–3,000 m, centred where people
// live in the five boroughs (population-weighted), over -conns WebSocket
// connections with grouped notifications. Publishers: -workers closed
// loops over -pubconns connections, each publishing incidents of radius
// 50–2,000 m, for -duration. Every notification is kept and, at the end,
// compared with the pairs whose circles truly meet: precision (what was
// delivered and owed, of what was delivered) and recall (of what was
// owed); pairs within a metre of tangency count on neither side.
//
// It runs one broker per -covers size (the cover a circle goes to, the
// broker's --cover), and one more with --bench-cells-only at the first
// size: the thesis's matching by cells alone, the baseline refinement is
// measured against. Each row reports notifications/s, the broker's CPU
// per notification, the cells per record (appends per publish, subtree
// reads per subscribe) and the bytes of the stored records.
//
// Files: workload.go draws the circles and judges the matches,
// broker.go runs a broker, records.go sizes the stored records.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed84792017/cellcast/bench/procs"
	"github.com/seed84792017/cellcast/client"
)

var (
	nSubs     = flag.Int("subs", 2000, "subscriber circles")
	subConns  = flag.Int("conns", 4, "subscriber WebSocket connections")
	pubConns  = flag.Int("pubconns", 4, "publisher WebSocket connections")
	workers   = flag.Int("workers", 16, "closed-loop publishers")
	duration  = flag.Duration("duration", 20*time.Second, "publishing phase of each run")
	covers    = flag.String("covers", "4", "comma-separated cover sizes, one run each; a cells-only run follows at the first")
	cellsOnly = flag.Bool("cells-only", true, "add the run matching by cells alone")
	brokerBin = flag.String("broker", "", "broker binary (default: build ./cmd/broker)")
	seed      = flag.Int64("seed", 1, "workload seed")
	profile   = flag.String("profile", "", "write a CPU profile of each run's broker here, the cover size and mode appended to the name")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "geobench:", err)
		os.Exit(1)
	}
}

// setup is one run's broker.
type setup struct {
	cover     int
	cellsOnly bool
}

func run() error {
	var runs []setup
	for _, f := range strings.Split(*covers, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 1 || k > 16 {
			return fmt.Errorf("-covers: %q is not a cover size of 1 to 16", f)
		}
		runs = append(runs, setup{cover: k})
	}
	if *cellsOnly {
		runs = append(runs, setup{cover: runs[0].cover, cellsOnly: true})
	}
	w, err := newWorkload(*seed)
	if err != nil {
		return err
	}
	fmt.Printf("%d subscriber circles (200-3000 m), incidents 50-2000 m, New York City, %d closed-loop publishers, %v a run\n\n", *nSubs, *workers, *duration)
	fmt.Println("| matching | cover | publications/s | notifications/s | broker CPU µs / notification | precision | recall | cells / record | bytes / record (sub, pub) | refused, retried |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range runs {
		r, err := measure(w, s)
		if err != nil {
			return err
		}
		mode := "exact (cells, then geometry)"
		if s.cellsOnly {
			mode = "cells only"
		}
		fmt.Printf("| %s | %d | %.0f | %.0f | %.2f | %.2f%% | %.2f%% | %.2f | %.0f, %.0f | %d |\n", mode, s.cover, r.pubRate, r.noteRate, r.cpuPerNote*1e6,
			100*r.precision, 100*r.recall, r.cells, r.subBytes, r.pubBytes, r.refused)
	}
	sizes := w.recordSizes(runs[0].cover)
	fmt.Printf("\nbytes of a stored record: before (one quad-tree cell of depth 12; a publication's point) sub %.0f, pub %.0f; now (a cover of up to %d cells and the circle) sub %.0f, pub %.0f, stored at %.2f cells each\n",
		sizes.oldSub, sizes.oldPub, runs[0].cover, sizes.sub, sizes.pub, sizes.cells)
	return nil
}

type result struct {
	pubRate, noteRate, cpuPerNote float64
	precision, recall             float64
	cells, subBytes, pubBytes     float64
	refused                       int64
}

// delivered is a notification: its subscription and publication.
type delivered struct {
	sid, pid string
}

func measure(w *workload, s setup) (result, error) {
	b, err := startBroker(s)
	if err != nil {
		return result{}, err
	}
	defer b.stop()
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	dial := func() (*client.Client, error) {
		return client.Dial(ctx, "ws://"+b.addr+"/ws", client.Options{UID: "bench", Log: quiet})
	}
	var mu sync.Mutex
	var got []delivered
	subOf := map[string]int{} // sid -> subscriber circle
	var subCells int
	subConn := make([]*client.Client, *subConns)
	for i := range subConn {
		if subConn[i], err = dial(); err != nil {
			return result{}, err
		}
		defer subConn[i].Close()
	}
	for i, c := range w.subs {
		sub, err := subConn[i%len(subConn)].Subscribe(ctx, client.SubscribeRequest{UID: "s" + strconv.Itoa(i),
			Location: client.Circle(c.lat, c.lng, c.r), Future: time.Hour, Inline: true,
			Handler: func(n client.Notification) {
				mu.Lock()
				got = append(got, delivered{n.Sid, n.Publication.Pid})
				mu.Unlock()
			}})
		if err != nil {
			return result{}, fmt.Errorf("subscribe: %w", err)
		}
		subOf[sub.Sid] = i
		subCells += max(1, len(sub.Cover))
	}
	pubConn := make([]*client.Client, *pubConns)
	for i := range pubConn {
		if pubConn[i], err = dial(); err != nil {
			return result{}, err
		}
		defer pubConn[i].Close()
	}
	var next atomic.Int64
	pubOf := sync.Map{} // pid -> incident
	var pubCells, refused atomic.Int64
	cpu0, err := procs.CPUSeconds(b.Cmd.Process.Pid)
	if err != nil {
		return result{}, err
	}
	if *profile != "" {
		go b.profile(fmt.Sprintf("%s.%d.%v", *profile, s.cover, s.cellsOnly), *duration*3/4)
	}
	start := time.Now()
	var wg sync.WaitGroup
	var failed atomic.Value
	for k := range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := pubConn[k%len(pubConn)]
			for time.Since(start) < *duration {
				i := int(next.Add(1) - 1)
				in := w.incident(i)
				p, err := c.Publish(ctx, client.PublishRequest{UID: "p", Location: client.Circle(in.lat, in.lng, in.r), Expires: time.Hour})
				var oe *client.Error
				for errors.As(err, &oe) && oe.Code == "overloaded" { // back-pressure: wait as told
					refused.Add(1)
					time.Sleep(max(oe.RetryAfter, 10*time.Millisecond))
					p, err = c.Publish(ctx, client.PublishRequest{UID: "p", Location: client.Circle(in.lat, in.lng, in.r), Expires: time.Hour})
				}
				if err != nil {
					failed.Store(err)
					return
				}
				pubOf.Store(p.Pid, i)
				pubCells.Add(int64(max(1, len(p.Cover))))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		return result{}, fmt.Errorf("publish: %w", err)
	}
	pubs := int(next.Load())
	// Wait for the notifications still on their way: until none came for
	// a second.
	for last := -1; ; time.Sleep(time.Second) {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == last {
			break
		}
		last = n
	}
	cpu1, err := procs.CPUSeconds(b.Cmd.Process.Pid)
	if err != nil {
		return result{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	pairs := make([][2]int, 0, len(got))
	for _, d := range got {
		si, ok1 := subOf[d.sid]
		pi, ok2 := pubOf.Load(d.pid)
		if !ok1 || !ok2 {
			return result{}, fmt.Errorf("a notification of %s to %s, neither of which this run made", d.pid, d.sid)
		}
		pairs = append(pairs, [2]int{si, pi.(int)})
	}
	precision, recall := w.judge(pairs, pubs)
	sizes := w.recordSizes(s.cover)
	return result{
		pubRate: float64(pubs) / elapsed.Seconds(), noteRate: float64(len(got)) / elapsed.Seconds(),
		cpuPerNote: (cpu1 - cpu0) / float64(max(len(got), 1)), precision: precision, recall: recall,
		cells:    (float64(subCells)/float64(len(w.subs)) + float64(pubCells.Load())/float64(max(pubs, 1))) / 2,
		subBytes: sizes.sub, pubBytes: sizes.pub, refused: refused.Load(),
	}, nil
}
