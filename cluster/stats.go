package cluster

import "sync/atomic"

// Stats count what a node sent over NATS, for the cost of the cluster
// path per operation (docs/cluster.md), and the shards it owns.
type Stats struct {
	Requests       uint64 // operations sent to shard owners
	Replies        uint64 // answers this node's shards sent as messages of their own
	BatchedReplies uint64 // answers that rode a batch to another node
	Notifications  uint64 // notifications sent to holding nodes
	Batches        uint64 // NATS messages that carried them and the batched replies
	Appends        uint64 // batches appended to shard logs
	PastRefs       uint64 // past results sent to other nodes by number (refs.go)
	PastRendered   uint64 // past results sent to other nodes as renderings
	LostRefs       uint64 // replies failed here for naming past results not kept
	Gaps           uint64 // routes this node resumed for a notification lost on its way here
	FlushErrors    uint64 // batches to holding nodes NATS refused, kept and sent again
	Owned          int    // shards served now
}

type counters struct {
	requests, replies, batchedReplies, notifications, batches, appends atomic.Uint64
	pastRefs, pastRendered, lostRefs, gaps, flushErrors                atomic.Uint64
}

// Stats returns the node's counters.
func (n *Node) Stats() Stats {
	c := &n.counters
	return Stats{Requests: c.requests.Load(), Replies: c.replies.Load(), BatchedReplies: c.batchedReplies.Load(), Notifications: c.notifications.Load(), Batches: c.batches.Load(),
		Appends: c.appends.Load(), PastRefs: c.pastRefs.Load(), PastRendered: c.pastRendered.Load(), LostRefs: c.lostRefs.Load(), Gaps: c.gaps.Load(), FlushErrors: c.flushErrors.Load(), Owned: len(n.Owned())}
}
