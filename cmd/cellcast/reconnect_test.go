package main

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/broker"
)

// freeAddr is a loopback address no one listens on, for a broker that
// restarts on the same port.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestSubSaysItReconnects: when the broker goes away, sub says so at
// once, and when the subscription is back, from which seq; what was
// published meanwhile follows.
func TestSubSaysItReconnects(t *testing.T) {
	for _, transport := range []string{"ws", "nats"} {
		t.Run(transport, func(t *testing.T) {
			dir, addr, natsAddr := t.TempDir(), freeAddr(t), freeAddr(t)
			cfg := broker.Config{DataDir: dir, HTTPAddr: addr, NATSListen: natsAddr}
			b := runBroker(t, cfg)
			server := "ws://" + addr + "/ws"
			if transport == "nats" {
				server = b.NATSURL()
			}
			s := sessionWith(t, map[string]string{"CELLCAST_SERVER": server})
			j := s.start("sub", "--cell", "3", "--future", "1m")
			s.run("pub", "--cell", "3.1", "--desc", "before")
			j.wait("before", 10*time.Second)
			lost := time.Now()
			if err := b.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			j.wait("reconnecting", 2*time.Second)
			if d := time.Since(lost); d > 2*time.Second {
				t.Errorf("the loss was told %v after", d)
			}
			b = runBroker(t, cfg)
			defer b.Shutdown(context.Background())
			j.wait("resumed", 10*time.Second)
			s.run("pub", "--cell", "3.2", "--desc", "after")
			j.stop(2)
			golden(t, "reconnect-"+transport+".golden", normalize(s.out.String()))
		})
	}
}
