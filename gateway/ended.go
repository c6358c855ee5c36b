package gateway

import (
	"github.com/seed84792017/cellcast/delivery"
	"github.com/seed84792017/cellcast/protocol"
)

// endedFrame tells a subscriber that a subscription stopped routing to it,
// why (delivery.EndReason), and the seq of the last notification sent; it
// follows that notification.
func endedFrame(e delivery.End) []byte {
	return encode(struct {
		Op     string             `json:"op"`
		Sid    string             `json:"sid"`
		Reason delivery.EndReason `json:"reason"`
		Last   int64              `json:"last"`
	}{protocol.OpEnded, e.Sid, e.Why, e.Last})
}

// Ended forgets e's subscription and tells the client why it ended. The
// frame takes the room of replies; a queue too full even for that drops
// it (the client then learns of the end from the window alone) rather
// than cut the connection.
func (c *wsConn) Ended(e delivery.End) {
	c.mu.Lock()
	delete(c.sids, e.Sid)
	c.mu.Unlock()
	select {
	case <-c.closed:
		return
	default:
	}
	c.q.push(c.dataFrame(endedFrame(e)), roomReply)
}

// Ended tells the user why a subscription ended, on their notification
// subject, after the notifications queued before it. A queue too full
// drops it: the subscriber learns of the end from the window alone.
func (k *natsSink) Ended(e delivery.End) {
	k.enqueue(SubjectNotify+"."+e.Uid, endedFrame(e))
}
