package broker

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

var crashRounds = flag.Int("crash.rounds", 20, "kill -9 rounds of TestKill9LosesNoAcknowledgedWrite in --durability sync (dualdb)")

// The kill -9 test drives the real binary over real WebSockets: bursts of
// pipelined publishes, subscribes and unsubscribes on several connections,
// a SIGKILL while replies are still owed, a restart on the same data
// directory, and a check of every write the broker acknowledged before it
// died against the test's own record of the acknowledgements:
//
//   - every acknowledged publication is in the past results of a later
//     subscribe over its round's cell, and found by a query on its
//     publisher;
//   - every acknowledged subscription answers resumed to a resume with
//     after 0, and replays every acknowledged publication it matches, with
//     seq = tp − ts rising;
//   - every acknowledged unsubscribe answers not_found to a resume;
//   - stamps after a restart are above every stamp seen before it.
//
// Publications live an hour and subscriptions listen an hour, so nothing
// expires while the test runs.

// crashPub and crashSub are acknowledged writes, as the replies gave them.
type crashPub struct {
	pid, uid string
	cell     []int
	tp       int64
	round    int
}

type crashSub struct {
	sid        string
	cell       []int
	ts, tmax   int64
	round      int
	cancelled  bool // an unsubscribe was acknowledged
	unresolved bool // an unsubscribe was sent and not answered: either outcome is right
}

// crashRecord is the oracle: what the broker acknowledged.
type crashRecord struct {
	mu       sync.Mutex
	pubs     []*crashPub
	subs     map[string]*crashSub
	maxStamp int64 // the latest stamp any reply showed
}

// crashConn is one WebSocket connection; a reader hands every frame to
// handle.
type crashConn struct {
	ws   *websocket.Conn
	wmu  sync.Mutex
	done chan struct{}
	err  error
}

func crashDial(t *testing.T, addr string, handle func(map[string]any)) *crashConn {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/ws", nil)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	c := &crashConn{ws: ws, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				c.err = err
				return
			}
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				c.err = fmt.Errorf("frame %q: %w", data, err)
				return
			}
			handle(m)
		}
	}()
	return c
}

func (c *crashConn) send(m map[string]any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.ws.WriteJSON(m)
}

func (c *crashConn) close() {
	c.ws.Close()
	<-c.done
}

// brokerProc is one run of the binary.
type brokerProc struct {
	cmd    *exec.Cmd
	addr   string
	out    *syncBuffer   // its stdout and stderr, read while it writes them
	exited chan struct{} // closed once the process is reaped
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// buildBroker builds ./cmd/broker once per test binary run.
func buildBroker(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "broker")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/broker")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/broker: %v\n%s", err, out)
	}
	return bin
}

// startBroker runs the binary on dir and waits for /readyz. A port taken
// meanwhile makes it exit; it then tries another.
func startBroker(t *testing.T, bin, dir string, args ...string) *brokerProc {
	t.Helper()
	for attempt := 0; attempt < 5; attempt++ {
		addr := freeAddr(t)
		out := &syncBuffer{}
		cmd := exec.Command(bin, append([]string{"--data", dir, "--http", addr, "--nats-listen", "127.0.0.1:0",
			"--log-level", "warn", "--rate", "1000000", "--burst", "1000000"}, args...)...)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p := &brokerProc{cmd: cmd, addr: addr, out: out, exited: make(chan struct{})}
		var waitErr error
		go func() { waitErr = cmd.Wait(); close(p.exited) }()
		// The guard only ends a hang; how long startup takes is not checked.
		for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			select {
			case <-p.exited:
				t.Logf("broker exited before ready (%v); retrying:\n%s", waitErr, out)
				p = nil
			default:
			}
			if p == nil {
				break
			}
			resp, err := http.Get("http://" + addr + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					t.Cleanup(func() { p.kill() })
					return p
				}
			}
		}
		if p != nil {
			p.kill()
			t.Fatalf("broker not ready within 60 s:\n%s", out)
		}
	}
	t.Fatal("broker would not start")
	return nil
}

// kill sends SIGKILL and reaps the process.
func (p *brokerProc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL) // an error: it is gone already
	<-p.exited
}

func cellString(c []int) string {
	parts := make([]string, len(c))
	for i, x := range c {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ".")
}

// overlaps: one cell is an ancestor-or-self of the other.
func overlaps(a, b []int) bool {
	n := min(len(a), len(b))
	return slices.Equal(a[:n], b[:n])
}

func stamp(t *testing.T, m map[string]any, field string) int64 {
	t.Helper()
	v, err := parseStamp(m, field)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func parseStamp(m map[string]any, field string) (int64, error) {
	s, _ := m[field].(string)
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("%s %q in %v: %w", field, s, m, err)
	}
	return tm.UnixNano(), nil
}

func TestKill9LosesNoAcknowledgedWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the broker binary")
	}
	bin := buildBroker(t)
	inFlight := 0
	t.Run("dualdb-sync", func(t *testing.T) { inFlight += crashRun(t, bin, *crashRounds, 1, "--durability", "sync") })
	t.Run("dualdb-os", func(t *testing.T) { inFlight += crashRun(t, bin, 3, 2, "--durability", "os") })
	t.Run("twodb-sync", func(t *testing.T) { inFlight += crashRun(t, bin, 3, 3, "--durability", "sync", "--storage", "twodb") })
	// Which kills land mid-burst depends on timing; that some do does not.
	if inFlight == 0 {
		t.Fatal("no kill left a request unanswered: the test killed idle brokers only")
	}
}

const (
	crashConns   = 4  // connections per burst, each with its requests pipelined
	crashPerConn = 20 // requests per connection per burst
)

// crashRun runs rounds of bursts and kills on one data directory and
// returns how many kills left requests unanswered.
func crashRun(t *testing.T, bin string, rounds int, seed uint64, args ...string) int {
	rng := rand.New(rand.NewPCG(seed, 84792017))
	dir := t.TempDir()
	rec := &crashRecord{subs: map[string]*crashSub{}}
	inFlightAtKill := 0
	p := startBroker(t, bin, dir, args...)
	for round := 0; round < rounds; round++ {
		before := rec.maxStamp
		if n := crashBurst(t, p, rec, rng, round); n > 0 {
			inFlightAtKill++
		}
		p = startBroker(t, bin, dir, args...)
		crashVerify(t, p, rec, round, before, round == rounds-1)
	}
	p.kill()
	t.Logf("%d rounds, %d with requests unanswered at the kill; %d publications and %d subscriptions acknowledged", rounds, inFlightAtKill, len(rec.pubs), len(rec.subs))
	return inFlightAtKill
}

// crashBurst sends a burst of pipelined requests over crashConns
// connections, kills the broker once some of them are answered, and
// records every acknowledgement read. It returns how many requests were
// sent and not answered when the broker died.
func crashBurst(t *testing.T, p *brokerProc, rec *crashRecord, rng *rand.Rand, round int) int {
	t.Helper()
	type pending struct {
		op   string
		cell []int
		sid  string
	}
	var mu sync.Mutex
	sent := map[string]pending{}
	var answered atomic.Int64
	arrived := make(chan struct{}, 1)
	var failure error
	handle := func(m map[string]any) {
		id, _ := m["id"].(string)
		mu.Lock()
		req, ok := sent[id]
		delete(sent, id)
		mu.Unlock()
		if !ok {
			return // a notification, or an error without an id
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		op, _ := m["op"].(string)
		tp, err1 := parseStamp(m, "tp")
		ts, err2 := parseStamp(m, "ts")
		tmax, err3 := parseStamp(m, "expires_at")
		switch {
		case op == "published" && req.op == "publish" && err1 == nil:
			pid, _ := m["pid"].(string)
			rec.pubs = append(rec.pubs, &crashPub{pid: pid, uid: fmt.Sprint("p", round), cell: req.cell, tp: tp, round: round})
			rec.maxStamp = max(rec.maxStamp, tp)
		case op == "subscribed" && req.op == "subscribe" && err2 == nil && err3 == nil:
			sid, _ := m["sid"].(string)
			rec.subs[sid] = &crashSub{sid: sid, cell: req.cell, ts: ts, tmax: tmax, round: round}
			rec.maxStamp = max(rec.maxStamp, ts)
		case op == "unsubscribed" && req.op == "unsubscribe":
			s := rec.subs[req.sid]
			s.cancelled, s.unresolved = true, false
		default:
			if failure == nil {
				failure = fmt.Errorf("%s answered %v", req.op, m)
			}
		}
		answered.Add(1)
		select {
		case arrived <- struct{}{}:
		default:
		}
	}
	// Earlier subscriptions still live, to cancel some of.
	rec.mu.Lock()
	var live []string
	for sid, s := range rec.subs {
		if !s.cancelled && !s.unresolved {
			live = append(live, sid)
		}
	}
	rec.mu.Unlock()
	slices.Sort(live)
	rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })

	// Build every connection's requests first, so the draws do not depend
	// on timing.
	root := []int{7, round + 1}
	var plans [crashConns][]map[string]any
	for c := range plans {
		for i := range crashPerConn {
			id := fmt.Sprintf("b%d-%d-%d", round, c, i)
			cell := append(slices.Clone(root), 1+rng.IntN(3))
			if rng.IntN(4) == 0 {
				cell = slices.Clone(root)
			} else if rng.IntN(3) == 0 {
				cell = append(cell, 1+rng.IntN(2))
			}
			var m map[string]any
			switch r := rng.IntN(10); {
			case r < 1 && len(live) > 0:
				sid := live[0]
				live = live[1:]
				m = map[string]any{"id": id, "op": "unsubscribe", "sid": sid, "uid": "s"}
				sent[id] = pending{op: "unsubscribe", sid: sid}
			case r < 4:
				m = map[string]any{"id": id, "op": "subscribe", "uid": "s", "cell": cellString(cell), "past": "1h", "future": "1h"}
				sent[id] = pending{op: "subscribe", cell: cell}
			default:
				m = map[string]any{"id": id, "op": "publish", "uid": fmt.Sprint("p", round), "cell": cellString(cell), "expires": "1h",
					"desc": fmt.Sprintf("round %d conn %d req %d", round, c, i), "attrs": map[string]string{"category": "crash"}}
				sent[id] = pending{op: "publish", cell: cell}
			}
			plans[c] = append(plans[c], m)
		}
	}
	total := crashConns * crashPerConn
	killAt := int64(total/10 + rng.IntN(total/4))
	// Mark unsubscribes as unresolved before they go out.
	rec.mu.Lock()
	for _, req := range sent {
		if req.op == "unsubscribe" {
			rec.subs[req.sid].unresolved = true
		}
	}
	rec.mu.Unlock()
	conns := make([]*crashConn, crashConns)
	for c := range conns {
		conns[c] = crashDial(t, p.addr, handle)
	}
	for c := range conns {
		go func() {
			for _, m := range plans[c] {
				if conns[c].send(m) != nil {
					return // the broker died
				}
			}
		}()
	}
	for answered.Load() < killAt {
		select {
		case <-arrived:
		case <-time.After(60 * time.Second): // a hang guard only
			t.Fatalf("round %d: %d of %d answered, no reply for 60 s:\n%s", round, answered.Load(), total, p.out)
		}
	}
	p.kill()
	// Replies already on their way count too: the broker sent them, so
	// their writes were durable.
	for _, c := range conns {
		<-c.done
		c.ws.Close()
	}
	if failure != nil {
		t.Fatalf("round %d: %v", round, failure)
	}
	mu.Lock()
	defer mu.Unlock()
	return len(sent) // sent or about to be, never answered
}

// crashVerify checks every acknowledged write after a restart. It checks
// the subscriptions of the round just killed, and those of every round
// when all is set.
func crashVerify(t *testing.T, p *brokerProc, rec *crashRecord, round int, before int64, all bool) {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var mu sync.Mutex
	replies := map[string]map[string]any{}
	notes := map[string][]map[string]any{} // by sid
	arrived := make(chan struct{}, 1)
	handle := func(m map[string]any) {
		mu.Lock()
		if m["op"] == "notification" {
			sid, _ := m["sid"].(string)
			notes[sid] = append(notes[sid], m)
		} else {
			replies[fmt.Sprint(m["id"])] = m
		}
		mu.Unlock()
		select {
		case arrived <- struct{}{}:
		default:
		}
	}
	// The reader writes the maps: read them under mu.
	get := func(id string) map[string]any {
		mu.Lock()
		defer mu.Unlock()
		return replies[id]
	}
	notesOf := func(sid string) []map[string]any {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(notes[sid])
	}
	c := crashDial(t, p.addr, handle)
	defer c.close()
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		for {
			mu.Lock()
			ok := cond()
			mu.Unlock()
			if ok {
				return
			}
			select {
			case <-arrived:
			case <-c.done:
				t.Fatalf("round %d: connection ended while waiting for %s: %v", round, what, c.err)
			case <-time.After(60 * time.Second): // a hang guard only
				t.Fatalf("round %d: no progress for 60 s waiting for %s", round, what)
			}
		}
	}
	send := func(m map[string]any) {
		t.Helper()
		if err := c.send(m); err != nil {
			t.Fatal(err)
		}
	}

	// Stamps continue above everything seen before the kill.
	id := fmt.Sprint("v", round, "-stamp")
	send(map[string]any{"id": id, "op": "publish", "uid": "v", "cell": "9", "expires": "1h"})
	waitUntil("a publish", func() bool { return replies[id] != nil })
	if tp := stamp(t, get(id), "tp"); tp <= rec.maxStamp || tp <= before {
		t.Fatalf("round %d: first stamp after the restart %d is not above %d, the latest before", round, tp, rec.maxStamp)
	}

	// Publications: one subscribe with no future per round's cell (its
	// subtree holds the round's every cell) and one query per round's
	// publisher.
	byRound := map[int][]*crashPub{}
	for _, pub := range rec.pubs {
		byRound[pub.round] = append(byRound[pub.round], pub)
	}
	for r := 0; r <= round; r++ {
		send(map[string]any{"id": fmt.Sprint("v", round, "-past-", r), "op": "subscribe", "uid": "v", "cell": cellString([]int{7, r + 1}), "past": "1h"})
		send(map[string]any{"id": fmt.Sprint("v", round, "-query-", r), "op": "query", "attr": "uid", "eq": fmt.Sprint("p", r), "k": 1000})
	}
	for r := 0; r <= round; r++ {
		past, query := fmt.Sprint("v", round, "-past-", r), fmt.Sprint("v", round, "-query-", r)
		waitUntil("past results and queries", func() bool { return replies[past] != nil && replies[query] != nil })
		for _, pair := range []struct{ id, op string }{{past, "subscribed"}, {query, "results"}} {
			m := get(pair.id)
			if m["op"] != pair.op {
				t.Fatalf("round %d: %s answered %v", round, pair.id, m)
			}
			got := map[string]bool{}
			results, _ := m["results"].([]any) // absent when empty
			for _, x := range results {
				pub, _ := x.(map[string]any)
				pid, _ := pub["pid"].(string)
				got[pid] = true
			}
			for _, pub := range byRound[r] {
				if !got[pub.pid] {
					t.Fatalf("round %d: acknowledged publication %s (round %d, cell %s) missing from the %s after the restart", round, pub.pid, r, cellString(pub.cell), pair.op)
				}
			}
		}
	}

	// Subscriptions: resume each from 0; it must answer resumed (or
	// not_found once cancelled) and replay every acknowledged publication
	// it matches.
	var check []*crashSub
	for _, s := range rec.subs {
		if (all || s.round == round) && !s.unresolved {
			check = append(check, s)
		}
	}
	slices.SortFunc(check, func(a, b *crashSub) int { return int(a.ts - b.ts) })
	for _, s := range check {
		send(map[string]any{"id": "resume-" + s.sid, "op": "resume", "sid": s.sid, "after": 0, "uid": "s"})
	}
	for _, s := range check {
		rid := "resume-" + s.sid
		waitUntil("a resume", func() bool { return replies[rid] != nil })
		m := get(rid)
		if s.cancelled {
			if m["op"] != "error" || m["code"] != "not_found" {
				t.Fatalf("round %d: subscription %s, cancelled with an acknowledgement, answered %v to resume", round, s.sid, m)
			}
			continue
		}
		if m["op"] != "resumed" {
			t.Fatalf("round %d: acknowledged subscription %s (round %d) answered %v to resume after the restart", round, s.sid, s.round, m)
		}
		replayed, _ := m["replayed"].(float64)
		n := int(replayed)
		waitUntil("replayed notifications", func() bool { return len(notes[s.sid]) >= n })
		got := map[string]bool{}
		last := int64(0)
		for _, note := range notesOf(s.sid)[:n] {
			pub, _ := note["publication"].(map[string]any)
			fseq, _ := note["seq"].(float64)
			seq := int64(fseq)
			if want := stamp(t, pub, "tp") - s.ts; seq != want {
				t.Fatalf("round %d: %s: seq %d, want tp − ts = %d", round, s.sid, seq, want)
			}
			if seq <= last {
				t.Fatalf("round %d: %s: seq %d after %d", round, s.sid, seq, last)
			}
			last = seq
			pid, _ := pub["pid"].(string)
			got[pid] = true
		}
		for _, pub := range rec.pubs {
			if overlaps(pub.cell, s.cell) && pub.tp > s.ts && pub.tp <= s.tmax && !got[pub.pid] {
				t.Fatalf("round %d: subscription %s (cell %s) did not replay acknowledged publication %s (cell %s)", round, s.sid, cellString(s.cell), pub.pid, cellString(pub.cell))
			}
		}
	}
}
