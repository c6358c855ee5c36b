// Package gateway is how clients reach the broker: the JSON protocol of
// docs/protocol.md over WebSocket (one connection, many subscriptions,
// a bounded send queue) and over NATS (request subjects, publications on
// cellcast.pub.<cell>, notifications on cellcast.notify.<uid>). Both
// transports share the request decoding, the location forms (Dewey cell,
// lat/lng, topic), the limits, the auth checks and the metrics, and hand
// operations to a delivery.Hub; the query op goes to the catalog of
// publications (query.go). Replies over the reply budget come in pages,
// pushed or pulled with a cursor (paging.go, cursors.go).
package gateway
