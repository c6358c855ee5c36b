package gateway

import (
	"github.com/seed84792017/cellcast/delivery"
)

// endedFrame tells a subscriber that a subscription stopped routing to it
// and why (delivery.EndReason); it follows the subscription's last
// notification.
func endedFrame(sid string, why delivery.EndReason) []byte {
	return encode(struct {
		Op     string             `json:"op"`
		Sid    string             `json:"sid"`
		Reason delivery.EndReason `json:"reason"`
	}{"ended", sid, why})
}

// Ended implements delivery.Ender. The frame takes the room of replies; a
// queue too full even for that drops it (the client then learns of the
// end from the window alone) rather than cut the connection.
func (c *wsConn) Ended(sid, _ string, why delivery.EndReason) {
	select {
	case <-c.closed:
		return
	default:
	}
	c.q.push(frame{data: endedFrame(sid, why)}, roomReply)
}

// Ended implements delivery.Ender, on the user's notification subject.
func (k *natsSink) Ended(sid, uid string, why delivery.EndReason) {
	k.nc.Publish(SubjectNotify+"."+uid, endedFrame(sid, why))
}
