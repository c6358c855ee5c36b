// Package client is the Go client of a Cellcast broker over WebSocket
// (docs/protocol.md).
//
// A Client holds one connection and pipelines requests on it: Subscribe,
// Publish, Unsubscribe and Query each wait for their own reply (or the
// context's end) while others are in flight. Paged replies are joined
// before they return. Error replies are *Error values whose Code is the
// protocol's; errors.Is matches them against ErrOverloaded and the other
// sentinels.
//
// A Subscription's notifications arrive on its channel C, or through a
// handler, in order and each once. The client keeps the last sequence
// number it received of every live subscription. When the connection
// drops (a network cut, a broker restart), the client dials again with
// backoff and resumes each subscription from that number, so the broker
// replays exactly what was missed; notifications at or below it are
// dropped, so nothing arrives twice. Requests in flight when the
// connection drops fail with ErrConnectionLost: a publish or subscribe may
// or may not have been stored.
//
// The package imports nothing of the broker: the protocol is its only
// contract with it.
//
// Locks: Client.mu (the connection, pending calls, subscriptions) before
// Subscription.mu (its queue); conn.wmu (writes) is taken alone.
package client
