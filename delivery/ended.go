package delivery

import "github.com/seed84792017/cellcast/protocol"

// Why a subscription's route to a sink ended, for subscribers that want
// to know (docs/protocol.md, "ended"). The values are the protocol's
// (protocol.EndReasons), which clients read; the type keeps sinks from
// being handed any other string.
type EndReason string

const (
	// EndWindow: the future window is over and every notification owed
	// has been handed to the sink.
	EndWindow EndReason = protocol.EndWindow
	// EndCancelled: unsubscribed; notifications of publications stamped
	// before the cancel have been handed to the sink.
	EndCancelled EndReason = protocol.EndCancelled
	// EndMoved: a resume routed the subscription to another sink.
	EndMoved EndReason = protocol.EndMoved
	// EndBehind: the window ended while the sink was behind (lagging):
	// notifications may be owed, and a resume while the broker still
	// knows the subscription replays them.
	EndBehind EndReason = protocol.EndBehind
)

// An End is a subscription that stopped routing to a sink.
type End struct {
	Sid, Uid string
	Why      EndReason
	// Last is the Seq of the last notification the sink took (0: none;
	// after a resume, at least its resume point), so a subscriber can
	// tell whether it missed the last ones.
	Last int64
	Tag  uint64 // the route's (Notification.Tag)
}
