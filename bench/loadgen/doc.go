// Package loadgen drives a running broker with a workload: subscribers over
// WebSocket (many users per connection), publishers over NATS or
// WebSocket, open-loop on the workload's schedule or closed-loop flat out.
// It measures throughput and publish→notify latency (HDR histogram, from
// each publication's scheduled time, so a stalled broker cannot hide its
// backlog), and checks completeness: what arrives is spooled to temporary
// files (spool.go), and the acknowledged operations, with the stamps the
// broker gave them, go through the streaming oracle of bench/owed; every
// owed past result and notification must have arrived exactly once, with
// nothing unexpected, checked in memory proportional to the operations
// rather than to the notifications (check.go).
//
// Connections are Go clients (client/), which reconnect and resume each
// subscription from the last sequence number received whenever the broker
// closes them. With DropEvery, a random subscriber connection is also cut
// that often (after its requests in flight are answered): completeness
// must still hold.
//
// Against a cluster, Config.Shard names each cell's shard (the cluster's
// layout): the report then gives the longest stretch without a reply per
// shard and what arrived per shard, which is what each shard's owner
// matched and sent. The oracle holds on a cluster when every cell lies at
// or below the shard depth (cmd/loadgen -shard-depth).
//
// cmd/loadgen is the command line; the package is separate so tests run it
// against an in-process broker.
package loadgen
