// Command brokerbench measures the broker end to end: it builds and starts
// cmd/broker in its own process, connects real WebSocket clients on
// loopback, and runs a moving-user workload over New York. Subscribers
// subscribe at points where people live (population-weighted), which the
// broker indexes on the world grid at -geo-level (its --geo-level: S2
// level 16, cells of about 150 m, by default), many subscriptions per
// connection; they move every -move, re-subscribing with a past window.
// Incidents are published on S2 cells at every level from -pub-min-level
// (3, larger than the state) to -geo-level, level L with weight
// -level-ratio^L, from a few publisher connections at -rate.
//
// Flags changed with the world grid: -geo-depth (a quad tree's depth) is
// now -geo-level, and -depth-ratio is -level-ratio (default 1.4, which
// keeps a publication reaching about 260 of 10k subscribers).
//
// It reports notifications/s, publications/s, publish→push latency (the
// publication's stamp to its arrival at the client), completeness of the
// past results and of the live notifications against an oracle computed
// from the replies (every expected pair, nothing missing, nothing twice,
// nothing extra), and the broker's RSS.
//
// The clients are the Go client (package client), in the encoding
// -encoding names; "both" runs the workload once in each, JSON first,
// each against a broker of its own, and prints a row for each.
//
// With -rss-only it instead stores -subs live subscriptions and reports
// the broker's RSS with the clients connected and after they leave.
//
// Files: broker.go runs the broker and reads its metrics, conn.go is a
// pipelining client connection, workload.go draws spots and cells,
// oracle.go judges delivery, rss.go is -rss-only.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/seed84792017/cellcast/bench/places"
	"github.com/seed84792017/cellcast/bench/procs"
	"github.com/seed84792017/cellcast/client"
	"github.com/seed84792017/cellcast/geo"
)

var (
	nSubs       = flag.Int("subs", 10_000, "live subscriptions (one per moving user)")
	encoding    = flag.String("encoding", "json", "the clients' encoding: json, cbor, or both (one run each, JSON first)")
	subConns    = flag.Int("conns", 50, "subscriber WebSocket connections")
	pubConns    = flag.Int("pubconns", 4, "publisher WebSocket connections")
	rate        = flag.Float64("rate", 500, "publications per second, offered")
	duration    = flag.Duration("duration", 20*time.Second, "live phase")
	move        = flag.Duration("move", 15*time.Second, "each user re-subscribes at a new spot this often (0: never)")
	past        = flag.Duration("past", 30*time.Second, "past window of every subscription")
	expires     = flag.Duration("expires", time.Minute, "lifetime of every publication")
	warm        = flag.Int("warm", 2000, "publications before the subscriptions, for the past results")
	levelRatio  = flag.Float64("level-ratio", 1.4, "publication S2 level L in -pub-min-level…-geo-level has weight ratio^L")
	geoLevel    = flag.Int("geo-level", geo.DefaultLevel, "S2 level the broker indexes the subscriptions' points at (its --geo-level), and the deepest publication")
	pubMinLevel = flag.Int("pub-min-level", 3, "shallowest S2 level of a publication (3: a cell holding all of New York)")
	storage     = flag.String("storage", "dualdb", "dualdb or twodb")
	brokerBin   = flag.String("broker", "", "broker binary (default: build ./cmd/broker)")
	window      = flag.Int("window", 32, "requests in flight per connection")
	rssOnly     = flag.Bool("rss-only", false, "only store -subs subscriptions and report RSS")
	cycle       = flag.Int("cycle", 0, "with -rss-only: each client makes this many subscriptions and leaves (0: stay connected)")
	keep        = flag.Bool("keep", false, "keep the broker's data directory and log")
	seed        = flag.Int64("seed", 1, "workload seed")
	profile     = flag.String("profile", "", "write a CPU profile of the broker's live phase here")
	selfProf    = flag.String("client-profile", "", "write a CPU profile of this process's (the clients') whole run here")
	brokerEnv   = flag.String("broker-env", "", "space-separated VAR=value settings for the broker only, e.g. \"GOGC=400 GOMEMLIMIT=200MiB\"")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "brokerbench:", err)
		os.Exit(1)
	}
}

func run() error {
	if *selfProf != "" {
		stop, err := procs.ProfileCPU(*selfProf)
		if err != nil {
			return err
		}
		defer stop()
	}
	if err := checkLevels(); err != nil {
		return err
	}
	w, err := newWorkload()
	if err != nil {
		return err
	}
	encs := map[string][]client.Encoding{"json": {client.EncodingJSON}, "cbor": {client.EncodingCBOR}, "both": {client.EncodingJSON, client.EncodingCBOR}}[*encoding]
	if encs == nil {
		return fmt.Errorf("-encoding %q: json, cbor or both", *encoding)
	}
	if !*rssOnly {
		fmt.Printf("| encoding | subs | conns | pubs/s offered | pubs/s | fan-out | notifications/s | p50 ms | p99 ms | max ms | server p50, p99 ms | live complete | past complete | subs/s | moves | RSS MiB (subs, end, peak) | clients' CPU s |\n")
		fmt.Printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	}
	var failed error
	for _, enc := range encs {
		b, err := startBroker()
		if err != nil {
			return err
		}
		if *rssOnly {
			err = rssRun(b, w, enc)
		} else {
			err = live(b, w, enc)
		}
		b.stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "brokerbench:", encName(enc)+":", err)
			failed = err
		}
	}
	return failed
}

// checkLevels refuses levels the grid or the broker would refuse.
func checkLevels() error {
	if *geoLevel < 1 || *geoLevel > geo.MaxLevel {
		return fmt.Errorf("-geo-level %d: use 1 to %d", *geoLevel, geo.MaxLevel)
	}
	if *pubMinLevel < 0 || *pubMinLevel > *geoLevel {
		return fmt.Errorf("-pub-min-level %d: use 0 to -geo-level (%d)", *pubMinLevel, *geoLevel)
	}
	if !(*levelRatio > 0) || math.IsInf(*levelRatio, 0) {
		return fmt.Errorf("-level-ratio %v: use a positive number", *levelRatio)
	}
	return nil
}

func encName(enc client.Encoding) string {
	if enc == client.EncodingCBOR {
		return "cbor"
	}
	return "json"
}

// cpuSeconds is this process's CPU so far: the clients'.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// live runs the moving-user workload against b with clients in enc, and
// prints its row.
func live(b *brokerProc, w *workload, enc client.Encoding) error {
	cpu0 := cpuSeconds()
	subs, err := dialAll(b.addr, *subConns, enc)
	if err != nil {
		return err
	}
	pubs, err := dialAll(b.addr, *pubConns, enc)
	if err != nil {
		return err
	}
	bk := &book{errors: map[string]int{}}
	rng := rand.New(rand.NewSource(*seed))

	// Past data, then the subscriptions (which get it as past results).
	for i := range *warm {
		pubs[i%len(pubs)].publish(bk, w.incident(rng), false)
	}
	for _, c := range pubs {
		c.drain()
	}
	type user struct {
		c        *conn
		uid      string
		lat, lng float64
	}
	users := make([]user, *nSubs)
	futureOf := func(i int) time.Duration {
		if *move == 0 {
			return *duration + time.Minute
		}
		// Staggered, so moves spread evenly over time.
		return time.Duration(float64(*move) * float64(i+1) / float64(len(users)))
	}
	t0 := time.Now()
	for i := range users {
		lat, lng := w.spot(rng)
		users[i] = user{c: subs[i%len(subs)], uid: "u" + strconv.Itoa(i), lat: lat, lng: lng}
		users[i].c.subscribe(bk, users[i].uid, lat, lng, futureOf(i)+*move/10)
	}
	for _, c := range subs {
		c.drain()
	}
	subRate := float64(len(users)) / time.Since(t0).Seconds()
	rssSubs, _ := b.rss()

	// The live phase: publishers at the offered rate, users moving.
	ctx, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for i, c := range pubs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(*seed + int64(i) + 1))
			every := time.Duration(float64(time.Second) * float64(len(pubs)) / *rate)
			for k := 1; ctx.Err() == nil; k++ {
				time.Sleep(time.Until(start.Add(time.Duration(k) * every)))
				c.publish(bk, w.incident(rng), true)
			}
		}()
	}
	if *profile != "" {
		go fetchProfile(b.addr, *duration)
	}
	moves := 0
	if *move > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(*seed - 1))
			for k := 0; ; k++ {
				for i := range users {
					at := t0.Add(futureOf(i) + time.Duration(k)*(*move))
					time.Sleep(time.Until(at))
					if ctx.Err() != nil {
						return
					}
					u := &users[i]
					u.lat, u.lng = places.Scatter(rng, u.lat, u.lng, 0.005)
					if !inMap(u.lat, u.lng) {
						u.lat, u.lng = w.spot(rng)
					}
					u.c.subscribe(bk, u.uid, u.lat, u.lng, *move+*move/10)
					moves++
				}
			}
		}()
	}
	wg.Wait()
	for _, c := range append(subs, pubs...) {
		c.drain()
	}
	// Let the last notifications arrive: until 2 s pass without any.
	for {
		last := int64(0)
		for _, c := range subs {
			last = max(last, c.lastNote.Load())
		}
		if time.Since(time.Unix(0, last)) > 2*time.Second {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	rssEnd, rssPeak := b.rss()
	sp50, sp99 := serverLatency(b.addr)
	if *profile != "" {
		fetch(b.addr, "heap", *profile+".heap")
	}
	for _, c := range append(subs, pubs...) {
		c.close()
	}

	// The oracle.
	var got []pair
	var lat []int32
	first, last := int64(math.MaxInt64), int64(0)
	for _, c := range subs {
		got = append(got, c.pairs...)
		lat = append(lat, c.lat...)
		first = min(first, start.UnixNano())
		last = max(last, c.lastNote.Load())
	}
	wantLive, wantPast := expected(bk)
	liveCmp := compare(wantLive, got)
	pastCmp := compare(wantPast, bk.pastGot)
	secs := float64(last-first) / 1e9
	slices.Sort(lat)
	pct := func(q float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))]) / 1000
	}
	livePubs := len(bk.pubTimes)
	fmt.Printf("| %s | %d | %d | %.0f | %.0f | %.0f | %.0f | %.1f | %.1f | %.1f | ≤%.1f, ≤%.1f | %s | %s | %.0f | %d | %.0f, %.0f, %.0f | %.1f |\n",
		encName(enc), *nSubs, *subConns, *rate, float64(livePubs)/duration.Seconds(), float64(len(wantLive))/float64(max(1, len(bk.pubs)-*warm)),
		float64(len(got))/secs, pct(0.5), pct(0.99), pct(1), sp50*1000, sp99*1000, liveCmp, pastCmp, subRate, moves, rssSubs, rssEnd, rssPeak, cpuSeconds()-cpu0)
	if len(bk.errors) > 0 {
		fmt.Println("errors:", bk.errors)
	}
	if liveCmp.missing+liveCmp.dup+liveCmp.extra+pastCmp.missing+pastCmp.dup+pastCmp.extra > 0 {
		return fmt.Errorf("incomplete delivery: live %s, past %s", liveCmp, pastCmp)
	}
	return nil
}
