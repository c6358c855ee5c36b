// Command brokerbench measures the broker end to end: it builds and starts
// cmd/broker in its own process, connects real WebSocket clients on
// loopback, and runs a moving-user workload over New York. Subscribers sit
// at quad-tree leaves where people live (population-weighted), many
// subscriptions per connection; they move every -move, re-subscribing with
// a past window. Incidents are published at every depth, deeper ones
// likelier (-depth-ratio), from a few publisher connections at -rate.
//
// It reports notifications/s, publications/s, publish→push latency (the
// publication's stamp to its arrival at the client), completeness of the
// past results and of the live notifications against an oracle computed
// from the replies (every expected pair, nothing missing, nothing twice,
// nothing extra), and the broker's RSS.
//
// With -rss-only it instead stores -subs live subscriptions and reports
// the broker's RSS with the clients connected and after they leave.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/seed84792017/cellcast/bench/places"
	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/internal/procstat"
)

var (
	nSubs      = flag.Int("subs", 10_000, "live subscriptions (one per moving user)")
	subConns   = flag.Int("conns", 50, "subscriber WebSocket connections")
	pubConns   = flag.Int("pubconns", 4, "publisher WebSocket connections")
	rate       = flag.Float64("rate", 500, "publications per second, offered")
	duration   = flag.Duration("duration", 20*time.Second, "live phase")
	move       = flag.Duration("move", 15*time.Second, "each user re-subscribes at a new spot this often (0: never)")
	past       = flag.Duration("past", 30*time.Second, "past window of every subscription")
	expires    = flag.Duration("expires", time.Minute, "lifetime of every publication")
	warm       = flag.Int("warm", 2000, "publications before the subscriptions, for the past results")
	depthRatio = flag.Float64("depth-ratio", 1.5, "publication depth d in 1…12 has weight ratio^d")
	geoDepth   = flag.Int("geo-depth", 12, "quad tree depth of the subscriptions")
	storage    = flag.String("storage", "dualdb", "dualdb or twodb")
	brokerBin  = flag.String("broker", "", "broker binary (default: build ./cmd/broker)")
	window     = flag.Int("window", 32, "requests in flight per connection")
	rssOnly    = flag.Bool("rss-only", false, "only store -subs subscriptions and report RSS")
	cycle      = flag.Int("cycle", 0, "with -rss-only: each client makes this many subscriptions and leaves (0: stay connected)")
	keep       = flag.Bool("keep", false, "keep the broker's data directory and log")
	seed       = flag.Int64("seed", 1, "workload seed")
	profile    = flag.String("profile", "", "write a CPU profile of the broker's live phase here")
	selfProf   = flag.String("client-profile", "", "write a CPU profile of this process's (the clients') whole run here")
	brokerEnv  = flag.String("broker-env", "", "space-separated VAR=value settings for the broker only, e.g. \"GOGC=400 GOMEMLIMIT=200MiB\"")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "brokerbench:", err)
		os.Exit(1)
	}
}

// brokerProc is the broker under test.
type brokerProc struct {
	cmd  *exec.Cmd
	addr string
	dir  string
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func startBroker() (*brokerProc, error) {
	dir, err := os.MkdirTemp("", "brokerbench-")
	if err != nil {
		return nil, err
	}
	bin := *brokerBin
	if bin == "" {
		bin = filepath.Join(dir, "broker")
		build := exec.Command("go", "build", "-o", bin, "./cmd/broker")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return nil, fmt.Errorf("building the broker (run from the repository root): %w", err)
		}
	}
	httpAddr, err := freePort()
	if err != nil {
		return nil, err
	}
	natsAddr, err := freePort()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "broker.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--data", filepath.Join(dir, "data"), "--http", httpAddr, "--nats-listen", natsAddr,
		"--storage", *storage, "--geo-depth", strconv.Itoa(*geoDepth),
		"--max-subscriptions", strconv.Itoa(*nSubs+1000), "--rate", "1e9", "--burst", "1000000000",
		"--log-level", "warn", "--pprof")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), strings.Fields(*brokerEnv)...)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	b := &brokerProc{cmd: cmd, addr: httpAddr, dir: dir}
	for i := 0; ; i++ {
		resp, err := http.Get("http://" + httpAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return b, nil
			}
		}
		if i > 300 {
			b.stop()
			return nil, fmt.Errorf("broker not ready; see %s", logf.Name())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (b *brokerProc) rss() (now, peak float64) {
	return procstat.ProcessRSSMiB(b.cmd.Process.Pid), procstat.ProcessPeakRSSMiB(b.cmd.Process.Pid)
}

func (b *brokerProc) stop() {
	b.cmd.Process.Signal(os.Interrupt)
	b.cmd.Wait()
	if !*keep {
		os.RemoveAll(b.dir)
	} else {
		fmt.Fprintln(os.Stderr, "kept", b.dir)
	}
}

// stamp reads the broker stamp that begins a sid or pid.
func stamp(id string) int64 {
	i := strings.IndexByte(id, '-')
	if i <= 0 {
		return 0
	}
	t, _ := strconv.ParseInt(id[:i], 36, 64)
	return t
}

type pair struct{ ts, tp int64 } // a subscription's and a publication's stamps

type reply struct {
	ID        string `json:"id"`
	Op        string `json:"op"`
	Sid       string `json:"sid"`
	Pid       string `json:"pid"`
	Cell      string `json:"cell"`
	ExpiresAt string `json:"expires_at"`
	Results   []struct {
		Pid string `json:"pid"`
	} `json:"results"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// More: further pages of the results follow (docs/protocol.md).
	More bool `json:"more"`
}

// client is one WebSocket connection with pipelined requests.
type client struct {
	ws     *websocket.Conn
	wmu    sync.Mutex
	mu     sync.Mutex
	wait   map[string]func(*reply)
	paged  map[string]*reply // paged replies still arriving
	next   int
	window chan struct{}
	done   chan struct{}

	// Written by the reader only; read after done.
	pairs    []pair
	lat      []int32 // µs
	lastNote atomic.Int64
	notes    atomic.Int64
}

func dial(addr string) (*client, error) {
	d := websocket.Dialer{ReadBufferSize: 256 << 10, WriteBufferSize: 64 << 10}
	ws, _, err := d.Dial("ws://"+addr+"/ws", nil)
	if err != nil {
		return nil, err
	}
	c := &client{ws: ws, wait: map[string]func(*reply){}, paged: map[string]*reply{}, window: make(chan struct{}, *window), done: make(chan struct{})}
	go c.read()
	return c, nil
}

var notePrefix = []byte(`{"op":"notification","sid":"`)

// endedPrefix starts the frame that says a subscription ended: the
// oracle knows the windows already.
var endedPrefix = []byte(`{"op":"ended",`)
var pidKey = []byte(`"pid":"`)

func (c *client) read() {
	defer close(c.done)
	var buf bytes.Buffer
	for {
		_, r, err := c.ws.NextReader()
		if err != nil {
			return
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			return
		}
		data := buf.Bytes()
		if bytes.HasPrefix(data, notePrefix) {
			now := time.Now().UnixNano()
			rest := data[len(notePrefix):]
			sid := rest[:bytes.IndexByte(rest, '"')]
			i := bytes.Index(rest, pidKey)
			pid := rest[i+len(pidKey):]
			pid = pid[:bytes.IndexByte(pid, '"')]
			tp := stampBytes(pid)
			// Only this goroutine writes these; they are read after done.
			c.pairs = append(c.pairs, pair{stampBytes(sid), tp})
			c.lat = append(c.lat, int32(min((now-tp)/1000, math.MaxInt32)))
			c.notes.Add(1)
			c.lastNote.Store(now)
			continue
		}
		if bytes.HasPrefix(data, endedPrefix) {
			continue
		}
		r2, err := parseReply(data)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bad frame %q: %v\n", data, err)
			continue
		}
		c.mu.Lock()
		if r2 = c.joinPages(r2); r2 == nil {
			c.mu.Unlock()
			continue
		}
		cb := c.wait[r2.ID]
		delete(c.wait, r2.ID)
		c.mu.Unlock()
		if cb == nil {
			fmt.Fprintf(os.Stderr, "unexpected frame %s\n", data)
			continue
		}
		<-c.window
		cb(r2)
	}
}

// joinPages holds a paged reply until its last page frame is in, and then
// returns it with every page's results; nil while pages are still due.
// c.mu is held.
func (c *client) joinPages(r *reply) *reply {
	if r.Op == "page" {
		first := c.paged[r.ID]
		if first == nil {
			return r // nobody waits for it: reported as unexpected
		}
		first.Results = append(first.Results, r.Results...)
		if r.More {
			return nil
		}
		delete(c.paged, r.ID)
		return first
	}
	if r.More {
		c.paged[r.ID] = r
		return nil
	}
	return r
}

// stampBytes is stamp without a string conversion.
func stampBytes(id []byte) int64 {
	var t int64
	for _, ch := range id {
		switch {
		case ch >= '0' && ch <= '9':
			t = t*36 + int64(ch-'0')
		case ch >= 'a' && ch <= 'z':
			t = t*36 + int64(ch-'a'+10)
		default:
			return t
		}
	}
	return t
}

// field returns the string value of "key" in a flat JSON object the broker
// rendered (its strings need no unescaping: ids, cells, times).
func field(data []byte, key string) string {
	k := `"` + key + `":"`
	i := bytes.Index(data, []byte(k))
	if i < 0 {
		return ""
	}
	v := data[i+len(k):]
	return string(v[:bytes.IndexByte(v, '"')])
}

// parseReply reads a reply without a full JSON decode: the load generator
// must not spend the CPU it measures the broker with. Errors and anything
// unusual take the slow path.
func parseReply(data []byte) (*reply, error) {
	r := &reply{ID: field(data, "id"), Op: field(data, "op")}
	switch r.Op {
	case "subscribed", "published", "page":
		r.Sid, r.Pid, r.Cell, r.ExpiresAt = field(data, "sid"), field(data, "pid"), field(data, "cell"), field(data, "expires_at")
		head := data
		if i := bytes.Index(data, []byte(`"results":[`)); i >= 0 {
			head = data[:i]
		}
		r.More = bytes.Contains(head, []byte(`"more":true`))
		if i := bytes.Index(data, []byte(`"results":[`)); i >= 0 {
			rest := data[i:]
			for {
				j := bytes.Index(rest, pidKey)
				if j < 0 {
					break
				}
				rest = rest[j+len(pidKey):]
				r.Results = append(r.Results, struct {
					Pid string `json:"pid"`
				}{string(rest[:bytes.IndexByte(rest, '"')])})
			}
		}
		return r, nil
	}
	r = &reply{}
	return r, json.Unmarshal(data, r)
}

// do sends a request; cb runs on the reader with the reply.
func (c *client) do(req map[string]any, cb func(*reply)) {
	c.window <- struct{}{}
	c.mu.Lock()
	c.next++
	id := strconv.Itoa(c.next)
	c.wait[id] = cb
	c.mu.Unlock()
	req["id"] = id
	b, _ := json.Marshal(req)
	c.wmu.Lock()
	err := c.ws.WriteMessage(websocket.TextMessage, b)
	c.wmu.Unlock()
	if err != nil {
		fmt.Fprintln(os.Stderr, "write:", err)
	}
}

// drain waits for every request's reply.
func (c *client) drain() {
	for range *window {
		c.window <- struct{}{}
	}
	for range *window {
		<-c.window
	}
}

type subRec struct {
	ts, tmin, tmax int64
	cell           dewey.ID
}

type pubRec struct {
	tp, tmax int64
	cell     dewey.ID
}

// book is what the replies told: the oracle's input.
type book struct {
	mu       sync.Mutex
	subs     []subRec
	pubs     []pubRec
	pastGot  []pair
	errors   map[string]int
	pubTimes []int64 // when each live publication was answered
}

func (b *book) fail(r *reply) {
	b.mu.Lock()
	b.errors[r.Code+": "+r.Message]++
	b.mu.Unlock()
}

func parseTime(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	return t.UnixNano()
}

func (b *book) subscribed(r *reply) {
	if r.Op != "subscribed" {
		b.fail(r)
		return
	}
	ts := stamp(r.Sid)
	s := subRec{ts: ts, tmin: ts - int64(*past), tmax: parseTime(r.ExpiresAt), cell: dewey.MustParse(r.Cell)}
	b.mu.Lock()
	b.subs = append(b.subs, s)
	for _, p := range r.Results {
		b.pastGot = append(b.pastGot, pair{ts, stamp(p.Pid)})
	}
	b.mu.Unlock()
}

func (b *book) published(r *reply, live bool) {
	if r.Op != "published" {
		b.fail(r)
		return
	}
	p := pubRec{tp: stamp(r.Pid), tmax: parseTime(r.ExpiresAt), cell: dewey.MustParse(r.Cell)}
	b.mu.Lock()
	b.pubs = append(b.pubs, p)
	if live {
		b.pubTimes = append(b.pubTimes, time.Now().UnixNano())
	}
	b.mu.Unlock()
}

// workload draws spots and publication cells.
type workload struct {
	sampler *places.Sampler
	tree    *dewey.QuadTree
	cum     []float64 // publication depth weights
}

func newWorkload() (*workload, error) {
	ps, err := places.Load()
	if err != nil {
		return nil, err
	}
	tree, err := dewey.NewQuadTree(dewey.NewYorkState, *geoDepth)
	if err != nil {
		return nil, err
	}
	w := &workload{sampler: places.NewSampler(ps), tree: tree}
	total := 0.0
	for d := 1; d <= *geoDepth; d++ {
		total += math.Pow(*depthRatio, float64(d))
		w.cum = append(w.cum, total)
	}
	return w, nil
}

// spot draws a point on the map.
func (w *workload) spot(rng *rand.Rand) (float64, float64) {
	for {
		lat, lng := w.sampler.Point(rng)
		if w.tree.Box().Contains(lat, lng) {
			return lat, lng
		}
	}
}

// incident draws a publication cell.
func (w *workload) incident(rng *rand.Rand) string {
	lat, lng := w.spot(rng)
	d := sort.SearchFloat64s(w.cum, rng.Float64()*w.cum[len(w.cum)-1]) + 1
	id, _ := w.tree.Cell(lat, lng, d)
	return id.String()
}

func (w *workload) publish(c *client, bk *book, rng *rand.Rand, live bool) {
	c.do(map[string]any{"op": "publish", "uid": "reporter", "cell": w.incident(rng), "expires": expires.String(), "desc": "incident"},
		func(r *reply) { bk.published(r, live) })
}

func subscribe(c *client, bk *book, uid string, lat, lng float64, future time.Duration) {
	c.do(map[string]any{"op": "subscribe", "uid": uid, "lat": lat, "lng": lng, "past": past.String(), "future": future.String()},
		bk.subscribed)
}

func dialAll(addr string, n int) ([]*client, error) {
	cs := make([]*client, n)
	for i := range cs {
		var err error
		if cs[i], err = dial(addr); err != nil {
			return nil, err
		}
	}
	return cs, nil
}

func run() error {
	if *selfProf != "" {
		f, err := os.Create(*selfProf)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	w, err := newWorkload()
	if err != nil {
		return err
	}
	b, err := startBroker()
	if err != nil {
		return err
	}
	defer b.stop()
	if *rssOnly {
		return rssRun(b, w)
	}
	subs, err := dialAll(b.addr, *subConns)
	if err != nil {
		return err
	}
	pubs, err := dialAll(b.addr, *pubConns)
	if err != nil {
		return err
	}
	bk := &book{errors: map[string]int{}}
	rng := rand.New(rand.NewSource(*seed))

	// Past data, then the subscriptions (which get it as past results).
	for i := range *warm {
		w.publish(pubs[i%len(pubs)], bk, rng, false)
	}
	for _, c := range pubs {
		c.drain()
	}
	type user struct {
		c        *client
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
		subscribe(users[i].c, bk, users[i].uid, lat, lng, futureOf(i)+*move/10)
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
				w.publish(c, bk, rng, true)
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
					if !w.tree.Box().Contains(u.lat, u.lng) {
						u.lat, u.lng = w.spot(rng)
					}
					subscribe(u.c, bk, u.uid, u.lat, u.lng, *move+*move/10)
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
		c.ws.Close()
		<-c.done
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
	live := compare(wantLive, got)
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
	fmt.Printf("| subs | conns | pubs/s offered | pubs/s | fan-out | notifications/s | p50 ms | p99 ms | max ms | server p50, p99 ms | live complete | past complete | subs/s | moves | RSS MiB (subs, end, peak) |\n")
	fmt.Printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	fmt.Printf("| %d | %d | %.0f | %.0f | %.0f | %.0f | %.1f | %.1f | %.1f | ≤%g, ≤%g | %s | %s | %.0f | %d | %.0f, %.0f, %.0f |\n",
		*nSubs, *subConns, *rate, float64(livePubs)/duration.Seconds(), float64(len(wantLive))/float64(max(1, len(bk.pubs)-*warm)),
		float64(len(got))/secs, pct(0.5), pct(0.99), pct(1), sp50*1000, sp99*1000, live, pastCmp, subRate, moves, rssSubs, rssEnd, rssPeak)
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		fmt.Printf("clients' CPU: %.1f s user, %.1f s system\n", time.Duration(ru.Utime.Nano()).Seconds(), time.Duration(ru.Stime.Nano()).Seconds())
	}
	if len(bk.errors) > 0 {
		fmt.Println("errors:", bk.errors)
	}
	if live.missing+live.dup+live.extra+pastCmp.missing+pastCmp.dup+pastCmp.extra > 0 {
		return fmt.Errorf("incomplete delivery: live %s, past %s", live, pastCmp)
	}
	return nil
}

// expected computes every (subscription, publication) pair the broker
// owes: live (published after the subscription, within its window) and
// past (published before it, within its past window, not expired then).
func expected(bk *book) (live, pastPairs []pair) {
	byCell := map[string][]int{}
	keys := make([]string, 0, len(bk.subs))
	for i, s := range bk.subs {
		k := string(s.cell.Encode())
		if _, ok := byCell[k]; !ok {
			keys = append(keys, k)
		}
		byCell[k] = append(byCell[k], i)
	}
	sort.Strings(keys)
	for _, p := range bk.pubs {
		check := func(i int) {
			s := &bk.subs[i]
			switch {
			case s.ts < p.tp && p.tp <= s.tmax:
				live = append(live, pair{s.ts, p.tp})
			case s.tmin <= p.tp && p.tp < s.ts && p.tmax >= s.ts:
				pastPairs = append(pastPairs, pair{s.ts, p.tp})
			}
		}
		lo, hi := p.cell.SubtreeRange()
		for j := sort.SearchStrings(keys, string(lo)); j < len(keys) && keys[j] < string(hi); j++ {
			for _, i := range byCell[keys[j]] {
				check(i)
			}
		}
		for _, a := range p.cell.Ancestors() {
			for _, i := range byCell[string(a.Encode())] {
				check(i)
			}
		}
	}
	return live, pastPairs
}

type comparison struct{ want, missing, dup, extra int }

func (c comparison) String() string {
	if c.missing+c.dup+c.extra == 0 {
		return fmt.Sprintf("100%% of %d", c.want)
	}
	return fmt.Sprintf("%.3f%% of %d (missing %d, twice %d, extra %d)", 100*float64(c.want-c.missing)/float64(max(1, c.want)), c.want, c.missing, c.dup, c.extra)
}

func cmpPair(a, b pair) int {
	if a.ts != b.ts {
		return compareInt(a.ts, b.ts)
	}
	return compareInt(a.tp, b.tp)
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func compare(want, got []pair) comparison {
	slices.SortFunc(want, cmpPair)
	slices.SortFunc(got, cmpPair)
	c := comparison{want: len(want)}
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		switch {
		case j > 0 && j < len(got) && got[j] == got[j-1]:
			c.dup++
			j++
		case j == len(got) || i < len(want) && cmpPair(want[i], got[j]) < 0:
			c.missing++
			i++
		case i == len(want) || cmpPair(want[i], got[j]) > 0:
			c.extra++
			j++
		default:
			i++
			j++
		}
	}
	return c
}

// rssRun stores -subs subscriptions and reports the broker's RSS with
// the clients connected (or, with -cycle, connecting one after another,
// so the subscriptions are stored but not routed), and after they leave.
func rssRun(b *brokerProc, w *workload) error {
	bk := &book{errors: map[string]int{}}
	per := *nSubs / *subConns
	if *cycle > 0 {
		per = *cycle
	}
	var made atomic.Int64
	var next atomic.Int64 // subscriptions handed out
	var mu sync.Mutex
	var open []*client
	t0 := time.Now()
	var wg sync.WaitGroup
	errc := make(chan error, *subConns)
	for g := range *subConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(*seed + int64(g)))
			for next.Load() < int64(*nSubs) {
				c, err := dial(b.addr)
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
					c.do(map[string]any{"op": "subscribe", "uid": "u" + strconv.FormatInt(i, 10), "lat": lat, "lng": lng, "future": "1h"},
						func(r *reply) {
							if r.Op != "subscribed" {
								bk.fail(r)
							}
							if n := made.Add(1); n%1_000_000 == 0 {
								now, _ := b.rss()
								fmt.Fprintf(os.Stderr, "%d subscriptions, %.0f/s, RSS %.0f MiB\n", n, float64(n)/time.Since(t0).Seconds(), now)
							}
						})
				}
				c.drain()
				if *cycle > 0 {
					c.ws.Close()
					<-c.done
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
		c.ws.Close()
		<-c.done
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

// fetchProfile saves a CPU profile of the broker.
func fetchProfile(addr string, d time.Duration) {
	fetch(addr, fmt.Sprintf("profile?seconds=%d", int(d.Seconds())), *profile)
}

// fetch saves one of the broker's pprof profiles.
func fetch(addr, what, path string) {
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/%s", addr, what))
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		return
	}
	defer f.Close()
	f.ReadFrom(resp.Body)
}

// serverLatency reads the broker's publish→push histogram (stamp to the
// flush of the notification) and returns the bucket bounds holding its
// median and 99th percentile.
func serverLatency(addr string) (p50, p99 float64) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return -1, -1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	type bucket struct{ le, n float64 }
	var bs []bucket
	for _, line := range strings.Split(string(body), "\n") {
		rest, ok := strings.CutPrefix(line, `cellcast_publish_to_push_seconds_bucket{le="`)
		if !ok {
			continue
		}
		le, n, _ := strings.Cut(rest, `"} `)
		l, err1 := strconv.ParseFloat(le, 64)
		c, err2 := strconv.ParseFloat(n, 64)
		if err1 == nil && err2 == nil {
			bs = append(bs, bucket{l, c})
		}
	}
	if len(bs) == 0 {
		return -1, -1
	}
	total := bs[len(bs)-1].n
	q := func(f float64) float64 {
		for _, b := range bs {
			if b.n >= f*total {
				return b.le
			}
		}
		return math.Inf(1)
	}
	return q(0.5), q(0.99)
}
