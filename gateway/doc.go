// Package gateway is how clients reach the broker: the JSON protocol of
// docs/protocol.md over WebSocket (one connection, many subscriptions,
// a bounded send queue; or the same frames in CBOR, cbor.go) and over NATS (request subjects, publications on
// cellcast.pub.<cell>, notifications on cellcast.notify.<uid>) and HTTP
// (POST /api/<op>). All transports share the request decoding, the
// location forms (a Dewey cell, a point, a circle or a GeoJSON polygon on
// the world grid with its cover, a topic: locate.go), queries by place
// (query.go), the limits, the auth checks and the metrics, and hand
// operations to the core service (package service), which owns the
// store, the delivery hub and the catalog. GET /cells serves the grid's
// outlines for maps (cells.go). The
// gateway never reaches storage itself. Replies over the reply budget
// come in pages, pushed or pulled with a cursor (paging.go, cursors.go).
// A WebSocket connection serves up to 32 requests at once, stamped and
// answered in the order sent, so that they share the disk's fsyncs
// (pipeline.go): an answer callback may wait there for the reply before
// it, with no lock held.
//
// Locks, outermost first: the delivery hub's route lock, held while the
// hub calls wsConn.Notify, wsConn.NotifyBatch and
// Locator.EncodePublication, then the leaves
// sendQueue.mu and pubCache.mu. Gateway.mu, wsConn.mu and users.mu (the
// per-user quotas, quota.go) are leaves too: nothing calls the service or
// the hub while holding them.
//
// Security (docs/security.md): every request is checked against its
// token (auth), the per-connection and per-user quotas, and the whole of
// it is validated before a new topic is registered. A WebSocket closes
// with 1008 when its token expires or is revoked (expiry.go); the writer
// is the only one to write to its socket (gorilla/websocket only does the
// handshake). NATS replies go only to the requester's own inbox,
// _INBOX.<uid>.
package gateway
