package cluster

import (
	"testing"
	"time"
)

// TestCloseWaitsForTheNodesTasks: Close cancels the context of the node's
// own goroutines (takes, restarts, hand-overs), returns only once they
// have, and starts none after.
func TestCloseWaitsForTheNodesTasks(t *testing.T) {
	nodes := startNodes(t, natsCluster(t, 3), 2)
	n := nodes[0].Node
	ended := make(chan struct{})
	n.spawn(func() {
		<-n.ctx.Done()
		time.Sleep(100 * time.Millisecond) // a take that is slow to give up
		close(ended)
	})
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	default:
		t.Fatal("Close returned while a task of the node's still ran")
	}
	ran := make(chan struct{})
	n.spawn(func() { close(ran) })
	select {
	case <-ran:
		t.Fatal("a task started after Close")
	case <-time.After(100 * time.Millisecond):
	}
	if owned := n.Owned(); len(owned) != 0 {
		t.Fatalf("a closed node still serves %v", owned)
	}
}
