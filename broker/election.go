package broker

import (
	"fmt"
	"sync"
	"time"
	_ "unsafe" // go:linkname

	_ "github.com/nats-io/nats-server/v2/server" // the variables below live there
)

// nats-server (v2.15.2, pinned in go.mod) takes no setting for its raft
// timing: the election timeouts and the heartbeat interval are package
// variables, which its own tests change. Left alone, a replicated stream
// whose leader's server dies waits 4-9 s before electing another. A node's
// death kills its embedded server, and with it the leaders that server
// held, so every kill would cost those shards that long. We set the same
// variables by name. A rename in a later nats-server fails the build at
// link time rather than pass silently.

//go:linkname natsMinElection github.com/nats-io/nats-server/v2/server.minElectionTimeout
var natsMinElection time.Duration

//go:linkname natsMaxElection github.com/nats-io/nats-server/v2/server.maxElectionTimeout
var natsMaxElection time.Duration

//go:linkname natsHeartbeat github.com/nats-io/nats-server/v2/server.hbInterval
var natsHeartbeat time.Duration

// DefaultElectionTimeout is ClusterConfig.ElectionTimeout's default.
const DefaultElectionTimeout = 500 * time.Millisecond

// MinElectionTimeout is the shortest ClusterConfig.ElectionTimeout taken.
const MinElectionTimeout = 500 * time.Millisecond

// raftTiming is the election timeout this process's NATS servers run
// with, once one has started; nats-server keeps it process-wide.
var raftTiming struct {
	sync.Mutex
	timeout time.Duration
}

// setRaftTiming gives the embedded NATS servers of this process an
// election timeout between timeout and twice it, and a heartbeat every
// quarter of it (about nats-server's own ratio: 4-9 s and 1 s). It must
// run before the first clustered server starts: raft reads the variables
// without a lock. A second call must ask for the same timing.
func setRaftTiming(timeout time.Duration) error {
	if timeout < MinElectionTimeout {
		return fmt.Errorf("election timeout %v: at least %v", timeout, MinElectionTimeout)
	}
	raftTiming.Lock()
	defer raftTiming.Unlock()
	if raftTiming.timeout != 0 {
		if raftTiming.timeout != timeout {
			return fmt.Errorf("election timeout %v: this process's NATS servers already run with %v, and nats-server keeps it process-wide", timeout, raftTiming.timeout)
		}
		return nil
	}
	natsMinElection, natsMaxElection, natsHeartbeat = timeout, 2*timeout, timeout/4
	raftTiming.timeout = timeout
	return nil
}
