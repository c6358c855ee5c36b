package cluster

import (
	"testing"
	"time"

	"github.com/seed84792017/cellcast/subscriptions"
)

// heardOf reports whether n counts node id among those it hears.
func heardOf(n *Node, id string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.heard[id]
	return ok
}

// TestLeavingNodeIsCountedOutAtOnce: a node that closes says so, and the
// others stop counting it among the live nodes when they hear it, not a
// lease TTL later: they take its shards at their next look at the leases.
func TestLeavingNodeIsCountedOutAtOnce(t *testing.T) {
	nodes := startNodes(t, natsCluster(t, 3), 2)
	// The shards are owned once startNodes returns, but n0 may not have
	// had n2's first heartbeat yet.
	for deadline := time.Now().Add(10 * time.Second); !heardOf(nodes[0].Node, nodes[2].cfg.ID); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("n0 does not hear n2 before it leaves")
		}
	}
	if err := nodes[2].Close(); err != nil {
		t.Fatal(err)
	}
	// Core NATS carries the goodbye; a moment covers its delivery.
	for deadline := time.Now().Add(time.Second); heardOf(nodes[0].Node, nodes[2].cfg.ID); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("n0 still counts n2, which left")
		}
	}
	waitOwned(t, nodes[:2], Shards{Depth: 2}.All())
}

// TestNewcomerGetsShardsOnlyOnceSettled: the nodes count a node that has
// just joined for taking but not for handing over, until it has been
// heard for a lease TTL, as long as the newcomer itself waits before it
// takes anything: a shard handed over sooner would go unserved meanwhile.
func TestNewcomerGetsShardsOnlyOnceSettled(t *testing.T) {
	n := &Node{cfg: Config{ID: "n0", LeaseTTL: 2 * time.Second}, heard: map[string]time.Time{}, since: map[string]time.Time{}}
	now := time.Now()
	n.heard["n1"], n.since["n1"] = now, now.Add(-time.Minute)
	n.heard["n2"], n.since["n2"] = now, now.Add(-time.Second) // joined a second ago
	alive, settled := n.liveNodes()
	if alive != 3 || settled != 2 {
		t.Fatalf("alive %d, settled %d; want 3 and 2", alive, settled)
	}
	n.since["n2"] = now.Add(-3 * time.Second)
	if alive, settled := n.liveNodes(); alive != 3 || settled != 3 {
		t.Fatalf("after a TTL: alive %d, settled %d; want 3 and 3", alive, settled)
	}
	n.heard["n1"] = now.Add(-3 * time.Second) // silent for a TTL
	if alive, settled := n.liveNodes(); alive != 2 || settled != 2 {
		t.Fatalf("n1 silent: alive %d, settled %d; want 2 and 2", alive, settled)
	}
}

// TestARestartedNodesTakesAreNew: a node killed and started again takes
// its shards back under lease values its previous life never wrote, take
// for take. A value that read as before left holders unaware that the
// shard had been rebuilt: they resumed nothing, and its notifications
// went nowhere (the rolling test's kill phase lost 15-54 of them).
func TestARestartedNodesTakesAreNew(t *testing.T) {
	cfg := Config{ID: "n3", Log: quiet}
	before, after := newNode(cfg, subscriptions.Limits{}), newNode(cfg, subscriptions.Limits{})
	seen := map[string]bool{}
	for range 8 {
		v := before.leaseValue()
		if seen[v] || nodeOf(v) != "n3" {
			t.Fatalf("first life: %q (seen %v)", v, seen)
		}
		seen[v] = true
	}
	for range 8 {
		if v := after.leaseValue(); seen[v] || nodeOf(v) != "n3" {
			t.Fatalf("the second life wrote %q, as the first did, or names another node", v)
		}
	}
}
