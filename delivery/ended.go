package delivery

// Why a subscription's route to a sink ended, for subscribers that want
// to know (docs/protocol.md, "ended").
type EndReason string

const (
	// EndWindow: the future window is over and every notification owed
	// has been handed to the sink.
	EndWindow EndReason = "window_over"
	// EndCancelled: unsubscribed; notifications of publications stamped
	// before the cancel have been handed to the sink.
	EndCancelled EndReason = "cancelled"
	// EndMoved: a resume routed the subscription to another sink.
	EndMoved EndReason = "moved"
	// EndBehind: the window ended while the sink was behind (lagging):
	// notifications may be owed, and a resume while the broker still
	// knows the subscription replays them.
	EndBehind EndReason = "behind"
)

// An Ender is a Sink that also hears why a subscription stopped routing
// to it. The hub calls Ended right after Lost, with no hub lock held.
type Ender interface {
	Ended(sid, uid string, why EndReason)
}

// lost tells sink that sid (of uid) no longer routes to it, and why.
func lost(sink Sink, sid, uid string, why EndReason) {
	sink.Lost(sid)
	if e, ok := sink.(Ender); ok {
		e.Ended(sid, uid, why)
	}
}
