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

// Ended implements delivery.Ender. The frame takes the room of replies; a
// queue too full even for that drops it (the client then learns of the
// end from the window alone) rather than cut the connection.
func (c *wsConn) Ended(e delivery.End) {
	select {
	case <-c.closed:
		return
	default:
	}
	c.q.push(c.dataFrame(endedFrame(e)), roomReply)
}

// Ended implements delivery.Ender, on the user's notification subject.
func (k *natsSink) Ended(e delivery.End) {
	k.nc.Publish(SubjectNotify+"."+e.Uid, endedFrame(e))
}
