// Package broker assembles a running Cellcast: the store (DualDB or
// TwoDB) in a data directory, the NATS connection (to an embedded
// nats-server unless a URL is given), the gateway's WebSocket and NATS
// transports, a small HTTP API, Prometheus metrics and health endpoints,
// and an orderly shutdown. It also sets up what docs/security.md
// describes: per-user NATS permissions on the embedded server (natsauth.go),
// TLS, HTTP timeouts and a connection cap (listen.go), the refusal to run
// open beyond loopback (security.go) and token reload on SIGHUP
// (reload.go). As a cluster node it embeds a clustered nats-server with
// JetStream (cluster.go) whose raft timing it sets (election.go). cmd/broker
// turns flags and environment into a Config and calls Run.
//
// Locks: the accept limiter's mu (accept.go) and raftTiming's
// (election.go) are each taken alone, never one inside the other.
package broker
