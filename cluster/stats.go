package cluster

import "sync/atomic"

// Stats count what a node sent over NATS, for the cost of the cluster
// path per operation (docs/cluster.md), and the shards it owns.
type Stats struct {
	Requests      uint64 // operations sent to shard owners
	Replies       uint64 // answers sent by this node's shards
	Notifications uint64 // notifications sent to holding nodes
	Batches       uint64 // NATS messages that carried them
	Appends       uint64 // batches appended to shard logs
	Owned         int    // shards served now
}

type counters struct {
	requests, replies, notifications, batches, appends atomic.Uint64
}

// Stats returns the node's counters.
func (n *Node) Stats() Stats {
	c := &n.counters
	return Stats{Requests: c.requests.Load(), Replies: c.replies.Load(), Notifications: c.notifications.Load(), Batches: c.batches.Load(),
		Appends: c.appends.Load(), Owned: len(n.Owned())}
}
