// Package cluster runs Cellcast on several nodes over a NATS cluster with
// JetStream (docs/cluster.md).
//
// The geo Dewey space is split into shards (Shards). A node owns shards
// through leases in a JetStream KV bucket: created and renewed with the
// expected revision, judged stale by the other nodes when a lease's
// revision has not moved for a TTL while the bucket took their own writes;
// who is alive (for a fair share) goes over core NATS heartbeats. For each
// shard it owns, a node runs a service.Service over a store of its own;
// every operation that writes goes to the shard's JetStream stream, the
// replicated log, before it is answered, and the owner runs operations
// one at a time so the log holds them in stamp order. A node taking a
// shard over rebuilds its store from the log (every record expires, so
// the stream's MaxAge bounds it), lifts its clock above the stamps it
// replayed, and appends its id to the log, which fences out an owner that
// lost its lease without knowing: its appends name the last sequence it
// knows and fail.
//
// Queries (query.go) go to every shard. A shard's catalog learns the
// publications whose home it is, so one stored in several shards is
// found once; it is rebuilt at each take, beside the serving shard, and
// the shard answers queries once it has learned what the log replayed.
// Each shard answers with its newest k, in pages that fit a NATS message,
// and the asking node keeps the newest k of all.
//
// Topic names resolve in a registry every node shares, a KV bucket
// (OpenTopics, topics.go), where the first create of an id decides.
//
// A self-join lives in g0 (a topic one in its top-level topic's shard, or
// its user's under Shards.TopicSpread), where all of its user's
// self-joins are; the node first asks the other shards its cells reach
// for the user's plain subscriptions there (a priors request), so that
// g0's store leaves out what those were sent too.
//
// Any node serves any client: Node implements the gateway's operations by
// sending each to the owner of the shard it concerns over NATS. The owner
// routes a subscription's notifications to the node holding its
// subscriber, through one sink per holding node (remotesink.go; the hub
// tags each route with the holder's number for it), and that node passes
// them on once and in order, resumes the subscription at the shard's next
// owner when the shard moves, and at the same owner when its subscriber
// fell behind.
//
// Requests, replies and notification batches between nodes are binary
// (requestcodec.go, replycodec.go, wire.go), with records in the store's
// encoding; a batch names each notification's route by the number its
// holder gave it. An owner's replies ride its notification batches, and
// it answers a log append's operations with its outboxes corked, so that
// its answers to one node leave in one message (outbox.go). The first
// node records the shard layout in the lease bucket, and a node of
// another layout is refused (ErrLayout).
//
// A node's traffic with itself (a request for a shard it owns, what its
// owners send its holder) skips NATS but keeps the same order (local.go).
//
// A subscribe's past results cross by reference where they can: an owner
// node numbers the renderings it sends a holder, which keeps them until
// they expire, and sends the number the next time (refs.go).
//
// Goroutines. A node's lease loop, and the takes, restarts and
// hand-overs it starts (Node.spawn), run under the node's context: Close
// stops the loop, cancels the rest and waits for them before it hands
// each shard over. An owner serves a shard only while its node's lease
// view names its take (Node.leased), and a holder's call ends answered or
// abandoned under the holder's lock, never both.
//
// Locks. Node.mu (leases, owned shards, heartbeats heard), holder.mu (routes and calls),
// owner.mu (an owner's routes to holders) and remoteSink.mu are never held
// together, except that holder.mu is held while a gateway sink's Notify
// runs (as the hub's lock is on one node), the hub's locks while a
// remoteSink's Notify takes its mu, and owner.mu while takeLocal queues a
// request (and, if the queue is full, sends its answer). Node.outMu is
// held while corking takes each outbox's and localBox's mu; those are
// taken last: no other lock of this package is taken while one is held
// (an outbox renders past results under its mu, with Config.Encode).
// keptRefs.mu, a holder's store of renderings, is taken alone.
package cluster
