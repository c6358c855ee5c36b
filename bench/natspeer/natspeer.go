package natspeer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/bench/workload"
)

// Config shapes a run.
type Config struct {
	URL      string // the nats-server
	Ops      []workload.Op
	Conns    int // subscriber connections (default 16)
	PubConns int // publisher connections (default 4)
	Window   int // operations in flight per connection (default 16)
	// Ahead bounds the operations handed to connections and not yet
	// flushed, across all of them, as loadgen.Config.Ahead does (0: only
	// each connection's queue bounds them). A connection flushes a window
	// at a time, so Ahead must exceed (Conns+PubConns)×(Window−1): the
	// connections holding partial windows must leave room to fill them.
	Ahead int
	// Settle is how long to wait, after the last operation, for messages
	// still on their way: until this passes without one (default 1 s).
	Settle time.Duration
}

// Report is a run's outcome, in loadgen's terms where they apply.
type Report struct {
	Ops           int     `json:"ops"`
	Subscribes    int     `json:"subscribes"`
	Publishes     int     `json:"publishes"`
	Seconds       float64 `json:"seconds"` // like loadgen's: up to the settle after the last message
	OpsPerSec     float64 `json:"ops_per_sec"`
	Notifications int64   `json:"notifications"`
	NotesPerSec   float64 `json:"notifications_per_sec"`
	// Dropped counts messages the server or the client library dropped
	// for slow consumers, as the client library reports them.
	Dropped int64 `json:"dropped"`
	// LatencyMs is publish→receive in milliseconds: p50, p99, max.
	LatencyMs [3]float64 `json:"latency_ms"`
}

func (c *Config) withDefaults() error {
	if c.URL == "" {
		return errors.New("natspeer: no server URL")
	}
	if c.Conns == 0 {
		c.Conns = 16
	}
	if c.PubConns == 0 {
		c.PubConns = 4
	}
	if c.Window == 0 {
		c.Window = 16
	}
	if c.Settle == 0 {
		c.Settle = time.Second
	}
	if c.Conns < 0 || c.PubConns < 0 || c.Window < 0 || c.Ahead < 0 {
		return errors.New("natspeer: negative connection count, window or ahead")
	}
	if held := (c.Conns + c.PubConns) * (c.Window - 1); c.Ahead > 0 && c.Ahead <= held {
		return fmt.Errorf("natspeer: ahead %d must exceed %d, the operations the connections may hold in partial windows", c.Ahead, held)
	}
	return nil
}

// Subject is the subject of a cell, "cell.1.4.2".
func Subject(cell fmt.Stringer) string { return "cell." + cell.String() }

// Subjects are what a subscription at cell listens on: the cell's and
// each ancestor's subject, and every subject below it.
func Subjects(cell []uint32) []string {
	out := make([]string, 0, len(cell)+1)
	s := "cell"
	for _, c := range cell {
		s += "." + strconv.FormatUint(uint64(c), 10)
		out = append(out, s)
	}
	return append(out, s+".>")
}

// receiver counts what one connection receives.
type receiver struct {
	n, last atomic.Int64
	mu      sync.Mutex
	lat     []int64 // publish→receive, ns, sampled
}

// handle files a message. Like loadgen with Cellcast's notifications, it
// picks out the publication's id and the time it was sent rather than
// decoding the whole JSON, so the two clients cost about the same.
func (r *receiver) handle(m *nats.Msg) {
	now := time.Now().UnixNano()
	if !bytes.Contains(m.Data, pidKey) {
		return
	}
	n := r.n.Add(1)
	r.last.Store(now)
	if n%16 != 0 {
		return // a sample is enough for percentiles
	}
	if i := bytes.Index(m.Data, sentKey); i >= 0 {
		j := i + len(sentKey)
		k := j
		for k < len(m.Data) && m.Data[k] >= '0' && m.Data[k] <= '9' {
			k++
		}
		if sent, err := strconv.ParseInt(string(m.Data[j:k]), 10, 64); err == nil {
			r.mu.Lock()
			r.lat = append(r.lat, now-sent)
			r.mu.Unlock()
		}
	}
}

var (
	sentKey = []byte(`"sent_ns":`)
	pidKey  = []byte(`"pid":"`)
)

// payload is about what a Cellcast notification carries.
func payload(op *workload.Op, i int, sent int64) []byte {
	tp := time.Unix(0, sent).UTC().Format(time.RFC3339Nano)
	exp := time.Unix(0, sent).Add(op.Expires).UTC().Format(time.RFC3339Nano)
	return fmt.Appendf(nil, `{"op":"notification","sid":"%d","seq":%d,"publication":{"pid":"%d","cell":%q,"tp":%q,"expires_at":%q,"uid":%q,"desc":%q},"sent_ns":%d}`,
		i, i, i, op.Cell.String(), tp, exp, op.Uid, op.Desc, sent)
}

type sub struct {
	ends time.Time
	ns   []*nats.Subscription
}

// Run carries cfg.Ops over the NATS server at cfg.URL.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	var dropped atomic.Int64
	onErr := nats.ErrorHandler(func(_ *nats.Conn, s *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrSlowConsumer) && s != nil {
			if n, err := s.Dropped(); err == nil {
				dropped.Store(max(dropped.Load(), int64(n)))
			}
		}
	})
	dialAll := func(n int) ([]*nats.Conn, error) {
		cs := make([]*nats.Conn, n)
		for i := range cs {
			c, err := nats.Connect(cfg.URL, onErr, nats.Name(fmt.Sprint("natspeer-", i)))
			if err != nil {
				for _, c := range cs[:i] {
					c.Close()
				}
				return nil, err
			}
			cs[i] = c
		}
		return cs, nil
	}
	subConns, err := dialAll(cfg.Conns)
	if err != nil {
		return nil, err
	}
	defer closeAll(subConns)
	pubConns, err := dialAll(cfg.PubConns)
	if err != nil {
		return nil, err
	}
	defer closeAll(pubConns)

	rcv := make([]*receiver, len(subConns))
	subTasks := make([]chan int, len(subConns))
	pubTasks := make(chan int, 1024)
	for i := range subTasks {
		rcv[i] = &receiver{}
		subTasks[i] = make(chan int, 1024)
	}
	errc := make(chan error, len(subConns)+len(pubConns))
	var ahead chan struct{}
	if cfg.Ahead > 0 {
		ahead = make(chan struct{}, cfg.Ahead)
	}
	release := func(n int) {
		for ; ahead != nil && n > 0; n-- {
			<-ahead
		}
	}
	// serve runs a connection's loop; after an error it keeps taking the
	// connection's tasks so that the feeder does not wait on it.
	serve := func(tasks <-chan int, loop func() error) {
		err := loop()
		errc <- err
		if err != nil {
			for range tasks {
				release(1)
			}
		}
	}
	var wg sync.WaitGroup
	start := time.Now()
	for i, nc := range subConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			serve(subTasks[i], func() error { return subscriber(nc, cfg, subTasks[i], rcv[i], release) })
		}()
	}
	for _, nc := range pubConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			serve(pubTasks, func() error { return publisher(nc, cfg, pubTasks, release) })
		}()
	}
	rep := &Report{Ops: len(cfg.Ops)}
	for i := range cfg.Ops {
		if ctx.Err() != nil {
			break
		}
		if ahead != nil {
			select {
			case ahead <- struct{}{}:
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				break
			}
		}
		op := &cfg.Ops[i]
		if op.Kind == workload.Subscribe {
			rep.Subscribes++
			subTasks[shard(op.Uid, len(subTasks))] <- i
		} else {
			rep.Publishes++
			pubTasks <- i
		}
	}
	for _, t := range subTasks {
		close(t)
	}
	close(pubTasks)
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	total := func() (n int64) {
		for _, r := range rcv {
			n += r.n.Load()
		}
		return n
	}
	for last := total(); ; {
		time.Sleep(cfg.Settle)
		n := total()
		if n == last {
			break
		}
		last = n
	}
	elapsed := time.Since(start)
	rep.Seconds = elapsed.Seconds()
	rep.OpsPerSec = float64(rep.Ops) / rep.Seconds
	rep.Notifications = total()
	rep.NotesPerSec = float64(rep.Notifications) / rep.Seconds
	rep.Dropped = dropped.Load()
	var lat []int64
	for _, r := range rcv {
		r.mu.Lock() // the connections are open: a straggler may still come
		lat = append(lat, r.lat...)
		r.mu.Unlock()
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		q := func(f float64) float64 { return float64(lat[min(len(lat)-1, int(f*float64(len(lat))))]) / 1e6 }
		rep.LatencyMs = [3]float64{q(0.5), q(0.99), q(1)}
	}
	return rep, nil
}

// subscriber makes one connection's subscriptions, ending each when its
// future window has passed, with a flush after each window of them; after
// a flush it releases the window's operations.
func subscriber(nc *nats.Conn, cfg Config, tasks <-chan int, r *receiver, release func(int)) error {
	var live []sub // in the order they end: every subscription has the same future window
	held := 0      // operations not yet flushed
	defer func() { release(held) }()
	for i := range tasks {
		op := &cfg.Ops[i]
		now := time.Now()
		for len(live) > 0 && !live[0].ends.After(now) {
			for _, s := range live[0].ns {
				if err := s.Unsubscribe(); err != nil {
					return err
				}
			}
			live = live[1:]
		}
		s := sub{ends: now.Add(op.Future)}
		for _, subj := range Subjects(op.Cell) {
			ns, err := nc.Subscribe(subj, r.handle)
			if err != nil {
				return err
			}
			s.ns = append(s.ns, ns)
		}
		live = append(live, s)
		if held++; held == cfg.Window {
			if err := nc.Flush(); err != nil {
				return err
			}
			release(held)
			held = 0
		}
	}
	return nc.Flush()
}

// publisher publishes on the publication's cell subject, with a flush
// after each window of them, then releases them.
func publisher(nc *nats.Conn, cfg Config, tasks <-chan int, release func(int)) error {
	held := 0 // operations not yet flushed
	defer func() { release(held) }()
	for i := range tasks {
		op := &cfg.Ops[i]
		if err := nc.Publish(Subject(op.Cell), payload(op, i, time.Now().UnixNano())); err != nil {
			return err
		}
		if held++; held == cfg.Window {
			if err := nc.Flush(); err != nil {
				return err
			}
			release(held)
			held = 0
		}
	}
	return nc.Flush()
}

func shard(uid string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(uid))
	return int(h.Sum32() % uint32(n))
}

func closeAll(cs []*nats.Conn) {
	for _, c := range cs {
		c.Close()
	}
}
