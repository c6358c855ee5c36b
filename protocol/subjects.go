package protocol

// NATS subjects (docs/protocol.md, "NATS").
const (
	// SubjectPub takes publishes by subject: cellcast.pub.<dewey tokens>
	// for a cell, cellcast.pub.topic.<path tokens> for a topic.
	SubjectPub = "cellcast.pub"
	// SubjectNotify + "." + uid carries the notifications and ended
	// frames of the user's NATS subscriptions (NotifySubject).
	SubjectNotify = "cellcast.notify"
	// SubjectPrefix + op is the request subject of each of RequestOps
	// (RequestSubject).
	SubjectPrefix = "cellcast."
	// InboxRoot is the root of reply subjects; under auth a user's
	// requests must ask for replies under InboxPrefix(uid).
	InboxRoot = "_INBOX"
)

// RequestSubject is the subject of op's requests.
func RequestSubject(op string) string { return SubjectPrefix + op }

// NotifySubject is the subject of uid's notifications.
func NotifySubject(uid string) string { return SubjectNotify + "." + uid }

// InboxPrefix is the prefix of uid's reply subjects, "_INBOX.<uid>",
// which only uid may subscribe to (nats.CustomInboxPrefix); "_INBOX"
// without a uid, where any inbox will do.
func InboxPrefix(uid string) string {
	if uid == "" {
		return InboxRoot
	}
	return InboxRoot + "." + uid
}

// WebSocket subprotocols (RFC 6455), the encodings a WebSocket may speak
// (docs/protocol.md, "Encodings"). A client that asks for neither speaks
// JSON.
const (
	SubprotocolJSON = "cellcast.json" // JSON in text frames, the default
	SubprotocolCBOR = "cellcast.cbor" // CBOR in binary frames, both ways
)

// The WebSocket handshake's query parameter that asks for grouped
// notifications (OpNotifications): ?notifications=grouped.
const (
	ParamNotifications   = "notifications"
	NotificationsGrouped = "grouped"
)
