package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A renewal that gave up waiting may be written after all: the lease
// then holds this node's value at a later revision, and is still its
// own. Another value, or no lease, is not.
func TestStillMineAfterALateRenewal(t *testing.T) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, JetStream: true, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	defer s.Shutdown()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server did not start")
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "test_leases"})
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{leases: kv}
	rev, err := kv.Create(ctx, "g11", []byte("n1#3"))
	if err != nil {
		t.Fatal(err)
	}
	if to, ok := n.stillMine(ctx, "g11", rev, "n1#3"); !ok || to != rev {
		t.Fatalf("unchanged: %d, %v; want %d, true", to, ok, rev)
	}
	late, err := kv.Update(ctx, "g11", []byte("n1#3"), rev) // the renewal that timed out
	if err != nil {
		t.Fatal(err)
	}
	if to, ok := n.stillMine(ctx, "g11", rev, "n1#3"); !ok || to != late {
		t.Fatalf("after a late renewal: %d, %v; want %d, true", to, ok, late)
	}
	if _, ok := n.stillMine(ctx, "g11", rev, "n1#4"); ok {
		t.Fatal("a lease of another take counted as this one's")
	}
	if _, err := kv.Update(ctx, "g11", []byte("n2#1"), late); err != nil {
		t.Fatal(err)
	}
	if _, ok := n.stillMine(ctx, "g11", late, "n1#3"); ok {
		t.Fatal("a lease another node took counted as this node's")
	}
	if _, ok := n.stillMine(ctx, "g12", 1, "n1#3"); ok {
		t.Fatal("a lease that does not exist counted as this node's")
	}
}
