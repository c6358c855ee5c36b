// Package protocol is the vocabulary of Cellcast's client protocol
// (docs/protocol.md): the ops, the error codes and the error reply, the
// reasons a subscription ends, the field names, the renderings of the
// frames both sides read byte for byte, the NATS subjects and the
// WebSocket subprotocols. The broker's gateway writes them, the cluster
// carries its errors in their terms between nodes, and the Go client and
// the cellcast command read them, all from here, as centrifugal/protocol
// serves Centrifuge and its clients.
//
// It imports only the standard library, so that a client depends on it
// without depending on the broker. Each list (Codes, EndReasons,
// RequestOps, ReplyOps, Limits, PublicationFields) holds every constant
// of its kind, which the package's tests check against its source, so
// that the tests of the gateway, the client and the cluster, which walk
// the lists, fail for a new code or reason that one of them does not
// handle.
package protocol
