package client_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/seed84792017/cellcast/client"
)

func dialNATS(t *testing.T, url, uid string, buffer int) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.DialNATS(ctx, url, client.Options{UID: uid, NATSBuffer: buffer, MinBackoff: 10 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestNATSSubscribePublishQuery(t *testing.T) {
	b, _ := running(t)
	ctx := ctxT(t)
	c := dialNATS(t, b.NATSURL(), "alice", 0)
	early, err := c.Publish(ctx, client.PublishRequest{Location: client.Cell("5.1"), Expires: time.Minute, Desc: "early", Attrs: map[string]string{"category": "nats"}})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Cell("5"), Past: time.Minute, Future: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(sub.Past) != 1 || sub.Past[0].Pid != early.Pid {
		t.Fatalf("past %+v", sub.Past)
	}
	p, err := c.Publish(ctx, client.PublishRequest{Location: client.Cell("5.2"), Expires: time.Minute, Desc: "live"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-sub.C:
		if n.Publication.Pid != p.Pid || n.Publication.Desc != "live" {
			t.Fatalf("notification %+v", n)
		}
	case <-ctx.Done():
		t.Fatal("no notification over NATS")
	}
	res, err := c.Query(ctx, client.QueryRequest{Attr: "category", Eq: "nats"})
	if err != nil || res.Count != 1 {
		t.Fatalf("query %+v, %v", res, err)
	}
	if _, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Cell("0")}); !errors.Is(err, client.ErrBadRequest) {
		t.Fatalf("a bad cell over NATS: %v", err)
	}
}

// TestNATSGapsAreRepaired stops reading while a burst arrives into a
// buffer of 8, so that NATS drops most of it (a slow consumer), then
// reads again while a second burst arrives. The client sees the gaps
// (each notification names the one before it) and the drops NATS reports,
// and resumes: in the end every publication arrives once, in order.
func TestNATSGapsAreRepaired(t *testing.T) {
	b, url := running(t)
	ctx := ctxT(t)
	sub := dialNATS(t, b.NATSURL(), "alice", 8)
	pub := dialT(t, url, "bob")
	var mu sync.Mutex
	got := map[string]int{}
	last := int64(0)
	arrived := make(chan struct{}, 1<<16)
	gate := make(chan struct{})
	var once sync.Once
	s, err := sub.Subscribe(ctx, client.SubscribeRequest{Location: client.Cell("6"), Future: time.Minute, Inline: true,
		Handler: func(n client.Notification) {
			once.Do(func() { <-gate }) // the reader stalls
			mu.Lock()
			if n.Seq <= last {
				t.Errorf("seq %d after %d", n.Seq, last)
			}
			last = n.Seq
			got[n.Publication.Pid]++
			mu.Unlock()
			arrived <- struct{}{}
		}})
	if err != nil {
		t.Fatal(err)
	}
	want := publishBurst(t, ctx, pub, 300, 8, "6.1")
	close(gate)
	for pid := range publishBurst(t, ctx, pub, 300, 8, "6.2") {
		want[pid] = true
	}
	for range want {
		select {
		case <-arrived:
		case <-ctx.Done():
			mu.Lock()
			t.Fatalf("%d of %d arrived; stats %+v", len(got), len(want), sub.Stats())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for pid := range want {
		if got[pid] != 1 {
			t.Fatalf("%s arrived %d times", pid, got[pid])
		}
	}
	st := sub.Stats()
	if st.Resumes == 0 {
		t.Fatalf("stats %+v: nothing was repaired", st)
	}
	t.Logf("stats %+v, last seq %d", st, s.LastSeq())
}

// TestNATSReconnectResumes drops the client's NATS connection again and
// again during a burst: after each reconnect it resumes, and every
// publication arrives once.
func TestNATSReconnectResumes(t *testing.T) {
	b, url := running(t)
	ctx := ctxT(t)
	sub := dialNATS(t, b.NATSURL(), "alice", 0)
	pub := dialT(t, url, "bob")
	s, err := sub.Subscribe(ctx, client.SubscribeRequest{Location: client.Cell("7"), Future: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				sub.ForceReconnect()
			}
		}
	}()
	want := publishBurst(t, ctx, pub, 600, 8, "7.1")
	close(stop)
	<-done
	collect(t, ctx, s, want)
	if st := sub.Stats(); st.Reconnects == 0 || st.Resumes == 0 {
		t.Fatalf("stats %+v: the reconnects did not happen", st)
	}
}

// recorder keeps the levels of the records logged through it.
type recorder struct {
	mu     sync.Mutex
	levels []slog.Level
	msgs   []string
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recorder) WithGroup(string) slog.Handler            { return r }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.levels, r.msgs = append(r.levels, rec.Level), append(r.msgs, rec.Message)
	return nil
}

// TestNATSNoRespondersIsNotAFrame sends a request through a NATS server
// no broker listens on. NATS answers on the inbox with a "503" status and
// no body; the client must take that for what it is, not log an
// unreadable frame, and the call ends at its deadline.
func TestNATSNoRespondersIsNotAFrame(t *testing.T) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	rec := &recorder{}
	c, err := client.DialNATS(ctxT(t), ns.ClientURL(), client.Options{UID: "alice", Log: slog.New(rec)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := c.Publish(ctx, client.PublishRequest{Location: client.Cell("5.1"), Expires: time.Minute, Desc: "x"}); err == nil {
		t.Fatal("a publish answered with no broker")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i, l := range rec.levels {
		if l >= slog.LevelWarn {
			t.Errorf("logged %v %q", l, rec.msgs[i])
		}
	}
	if !slices.Contains(rec.msgs, "cellcast client: NATS status on the inbox") {
		t.Errorf("the status was not seen: %q", rec.msgs)
	}
}
