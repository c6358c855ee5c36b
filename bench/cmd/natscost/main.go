// Command natscost measures what the NATS primitives a Cellcast cluster is
// built on cost in CPU on this machine, one at a time, as a lightly loaded
// cluster uses them (docs/cluster-benchmarks.md):
//
//	go run ./bench/cmd/natscost [-n 5000] [-nats-server PATH]
//
// It starts three nats-server processes clustered with JetStream (as
// `make tools` installs, or -nats-server) and, from this process:
//
//   - publishes to an R3 file stream and waits for each acknowledgement
//     (a shard's log append);
//   - sends requests from a client of one server to a responder on
//     another and waits for each reply (a request to a shard's owner);
//   - publishes with no subscriber and flushes (one message and a
//     round trip to the server).
//
// The CPU is that of the three servers and this process (from /proc),
// less what they spend idle, per operation.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed84792017/cellcast/bench/procs"
)

func main() {
	n := flag.Int("n", 5000, "operations of each kind")
	bin := flag.String("nats-server", "", "nats-server binary (default: .tools/nats-server or $PATH)")
	size := flag.Int("size", 200, "message bytes")
	flag.Parse()
	if err := run(*bin, *n, *size); err != nil {
		fmt.Fprintln(os.Stderr, "natscost:", err)
		os.Exit(1)
	}
}

func run(bin string, n, size int) error {
	dir, err := os.MkdirTemp("", "natscost")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	c, err := procs.StartNATSCluster(bin, dir, 3)
	if err != nil {
		return err
	}
	defer c.Stop()
	pids := []int{os.Getpid()}
	for _, cmd := range c.Cmds {
		pids = append(pids, cmd.Process.Pid)
	}
	a, err := nats.Connect(c.URLs[0])
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := nats.Connect(c.URLs[1])
	if err != nil {
		return err
	}
	defer b.Close()
	js, err := jetstream.New(a)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	msg := make([]byte, size)
	// The servers' meta group, then the stream's group, may still be
	// electing leaders: try until both answer.
	var last error
	for ctx.Err() == nil {
		tctx, tcancel := context.WithTimeout(ctx, 5*time.Second)
		_, last = js.CreateOrUpdateStream(tctx, jetstream.StreamConfig{Name: "COST", Subjects: []string{"cost"}, Replicas: 3, Storage: jetstream.FileStorage})
		if last == nil {
			_, last = js.Publish(tctx, "cost", msg)
		}
		tcancel()
		if last == nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if last != nil {
		return fmt.Errorf("R3 stream: %w", last)
	}
	if _, err := b.Subscribe("cost.svc", func(m *nats.Msg) { m.Respond(msg) }); err != nil {
		return err
	}
	if err := b.Flush(); err != nil {
		return err
	}
	m := meter{pids: pids}
	if err := m.idle(5 * time.Second); err != nil {
		return err
	}
	fmt.Printf("three nats-server processes, %d-byte messages, one operation at a time; idle: %.3f CPU-s per second\n", size, m.idlePerSec)
	for _, x := range []struct {
		name string
		op   func() error
	}{
		{"R3 stream publish, acknowledged", func() error { _, err := js.Publish(ctx, "cost", msg); return err }},
		{"request and reply across a route", func() error { _, err := a.Request("cost.svc", msg, 5*time.Second); return err }},
		{"publish, no subscriber, flushed", func() error { a.Publish("cost.none", msg); return a.Flush() }},
	} {
		cpu, wall, err := m.each(n, x.op)
		if err != nil {
			return fmt.Errorf("%s: %w", x.name, err)
		}
		fmt.Printf("%-34s %6.0f µs CPU each, %6.0f µs wall\n", x.name, cpu*1e6, wall*1e6)
	}
	return nil
}

// meter reads the CPU of a set of processes.
type meter struct {
	pids       []int
	idlePerSec float64
}

func (m *meter) cpu() (float64, error) {
	t := 0.0
	for _, p := range m.pids {
		s, err := procs.CPUSeconds(p)
		if err != nil {
			return 0, err
		}
		t += s
	}
	return t, nil
}

// idle learns what the processes spend doing nothing over d.
func (m *meter) idle(d time.Duration) error {
	c0, err := m.cpu()
	if err != nil {
		return err
	}
	time.Sleep(d)
	c1, err := m.cpu()
	m.idlePerSec = (c1 - c0) / d.Seconds()
	return err
}

// each runs op n times and returns the CPU (less idle) and wall time of
// one.
func (m *meter) each(n int, op func() error) (cpu, wall float64, err error) {
	c0, err := m.cpu()
	if err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	for range n {
		if err := op(); err != nil {
			return 0, 0, err
		}
	}
	d := time.Since(t0).Seconds()
	c1, err := m.cpu()
	return (c1 - c0 - m.idlePerSec*d) / float64(n), d / float64(n), err
}
