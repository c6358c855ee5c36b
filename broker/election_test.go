package broker

import (
	"strings"
	"testing"
)

// The raft timing is nats-server's, for the whole process: every clustered
// broker in it must ask for the same, and the variables nats-server reads
// must hold it.
func TestRaftTimingIsProcessWide(t *testing.T) {
	if err := setRaftTiming(MinElectionTimeout / 2); err == nil {
		t.Fatal("an election timeout under the minimum was taken")
	}
	if err := setRaftTiming(DefaultElectionTimeout); err != nil {
		t.Fatal(err) // the first call, or the same timing as other tests' brokers
	}
	if natsMinElection != DefaultElectionTimeout || natsMaxElection != 2*DefaultElectionTimeout || natsHeartbeat != DefaultElectionTimeout/4 {
		t.Fatalf("nats-server runs with elections %v-%v, heartbeats %v", natsMinElection, natsMaxElection, natsHeartbeat)
	}
	err := setRaftTiming(3 * DefaultElectionTimeout)
	if err == nil || !strings.Contains(err.Error(), "process-wide") {
		t.Fatalf("a second timing in one process: %v", err)
	}
	if natsMinElection != DefaultElectionTimeout {
		t.Fatalf("the refused timing changed nats-server's: %v", natsMinElection)
	}
}
