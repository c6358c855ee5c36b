package client_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"

	"github.com/seed84792017/cellcast/broker"
)

// startBroker runs a broker in this process on addr ("127.0.0.1:0": any
// port) with its data in dir.
func startBroker(t *testing.T, dir, addr string) *broker.Broker {
	t.Helper()
	return startWith(t, broker.Config{DataDir: dir, HTTPAddr: addr})
}

func startWith(t *testing.T, cfg broker.Config) *broker.Broker {
	t.Helper()
	cfg.NATSListen = "127.0.0.1:0"
	cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := broker.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// running starts a broker that stops with the test, and returns its
// WebSocket URL.
func running(t *testing.T) (*broker.Broker, string) {
	t.Helper()
	b := startBroker(t, t.TempDir(), "127.0.0.1:0")
	t.Cleanup(func() { b.Shutdown(context.Background()) })
	return b, "ws://" + b.HTTPAddr() + "/ws"
}

// proxy forwards TCP connections to target and can cut them all at once,
// as a network failure would: no close frame, no FIN from the broker.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
	return p
}

func (p *proxy) url() string { return "ws://" + p.ln.Addr().String() + "/ws" }

// cut drops every connection made so far.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// freeAddr returns a loopback address no one listens on, for a broker
// that restarts on the same port.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
