package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
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
	_, kv := testBucket(t)
	ctx := context.Background()
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

// testBucket is a KV bucket on a NATS server of the test's own.
func testBucket(t *testing.T) (*nats.Conn, jetstream.KeyValue) {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, JetStream: true, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	t.Cleanup(s.Shutdown)
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server did not start")
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: "test_leases"})
	if err != nil {
		t.Fatal(err)
	}
	return nc, kv
}

// One batched read of many leases sees what a KV Get of each sees: the
// last value and revision of a key, and nothing of a key never written,
// deleted or purged, whatever came before.
func TestLeaseReadAgainstGets(t *testing.T) {
	nc, kv := testBucket(t)
	ctx := context.Background()
	r, err := newLeaseReader(nc, kv.Bucket())
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	rng := rand.New(rand.NewPCG(7, 11))
	var keys []string
	for i := range 24 {
		keys = append(keys, fmt.Sprintf("g%d", i))
	}
	keys = append(keys, "t3", "layout", "node.n1")
	for round := range 40 {
		for range 1 + rng.IntN(12) {
			k := keys[rng.IntN(len(keys))]
			v := []byte(fmt.Sprintf("n%d#%d.%d", rng.IntN(3), round, rng.IntN(100)))
			switch rng.IntN(5) {
			case 0:
				kv.Create(ctx, k, v) // fails on a live key: as the lease loop's
			case 1, 2:
				kv.Put(ctx, k, v)
			case 3:
				kv.Delete(ctx, k)
			default:
				kv.Purge(ctx, k)
			}
		}
		asked := slices.Clone(keys)
		rng.Shuffle(len(asked), func(i, j int) { asked[i], asked[j] = asked[j], asked[i] })
		asked = asked[:1+rng.IntN(len(asked))]
		got, err := r.read(ctx, asked)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]leaseEntry{}
		for _, k := range asked {
			e, err := kv.Get(ctx, k)
			if errors.Is(err, jetstream.ErrKeyNotFound) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			want[k] = leaseEntry{value: string(e.Value()), rev: e.Revision()}
		}
		if !maps.Equal(got, want) {
			t.Fatalf("round %d, keys %v:\n read %v\n gets %v", round, asked, got, want)
		}
	}
}

// More keys than one direct get answers are read in several.
func TestLeaseReadOfManyKeys(t *testing.T) {
	nc, kv := testBucket(t)
	ctx := context.Background()
	r, err := newLeaseReader(nc, kv.Bucket())
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	var keys []string
	want := map[string]leaseEntry{}
	for i := range readAtOnce + 100 {
		k := fmt.Sprintf("g%d", i)
		keys = append(keys, k)
		if i%7 == 3 {
			continue // never written
		}
		rev, err := kv.Put(ctx, k, []byte(k))
		if err != nil {
			t.Fatal(err)
		}
		want[k] = leaseEntry{value: k, rev: rev}
	}
	got, err := r.read(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("read %d entries, want %d", len(got), len(want))
	}
}
