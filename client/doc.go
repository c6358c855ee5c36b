// Package client is the Go client of a Cellcast broker, over WebSocket
// (Dial) or NATS (DialNATS) (docs/protocol.md).
//
// A Client pipelines requests on one connection: Subscribe, Publish,
// Unsubscribe, Query and QueryPlace each wait for their own reply (or the
// context's end) while others are in flight. Paged replies are joined
// before they return. Error replies are *Error values whose Code is the
// protocol's; errors.Is matches them against ErrOverloaded and the other
// sentinels. A request the client can tell is wrong (a negative window or
// lifetime, a bad Location) fails with ErrInvalidRequest or
// ErrBadLocation before anything is sent.
//
// Places are anywhere on Earth, on the broker's S2 world grid: a Point
// lies in one cell at the broker's geo level, a Circle or a Polygon
// (GeoJSON) on a cover of a few cells (Location.Cover). The cells only
// find candidates: a subscription hears a publication when their places
// truly meet, and notifications carry the publication's point, circle or
// polygon back (Publication.At, Publication.Polygon).
//
// A Subscription's notifications arrive on its channel C, or through a
// handler, in order and each once, until the broker says the
// subscription ended (Err says why). The client keeps the last sequence
// number it received of every live subscription. When the connection
// drops (a network cut, a broker restart), the client connects again
// with backoff and resumes each subscription from that number, so the
// broker replays exactly what was missed; notifications at or below it
// are dropped, so nothing arrives twice. Over NATS, which may drop single
// messages, each notification names the one sent before it (prev), and a
// gap is repaired the same way. Requests in flight when the connection
// drops fail with ErrConnectionLost: a publish or subscribe may or may
// not have been stored. Options.OnDisconnect and Options.OnResume tell of
// each drop and each resume, for a user who would otherwise wait in
// silence.
//
// A WebSocket speaks JSON, or CBOR in binary frames with
// Options.Encoding = EncodingCBOR (cbor.go): the same frames, cheaper to
// decode. Frames are decoded by hand where the broker's rendering allows
// (decode.go, cbor.go), with encoding/json or fxamacker/cbor as the
// fallback; fuzz targets hold each pair to the same results. The client
// asks for grouped notifications (grouped.go) unless
// Options.SeparateNotifications: one frame carries a publication to all
// of the connection's subscriptions it matches, and is decoded once.
//
// The package imports nothing of the broker: the protocol is its only
// contract with it, and package protocol, which the broker's gateway
// uses too, spells its ops, codes, reasons, fields and subjects.
//
// Requests sent together on a WebSocket leave together: the sender that
// finds no write under way writes every frame queued meanwhile, each burst
// in one write(2) (burst.go).
//
// Locks: Client.mu (the connection, pending calls, subscriptions) before
// Subscription.mu (its queue). wsConn.wmu (writes) before wsConn.qmu (the
// queue of frames) and before heldConn.mu (a burst's bytes), which are not
// nested; natsConn.mu (its subscriptions) is taken alone.
package client
