package protocol

// Why a subscription stopped reaching a connection (on NATS, its user's
// subject): the reason field of an ended frame (OpEnded). The frame comes
// after the subscription's last notification there, and its last field
// is that notification's seq.
const (
	// EndWindow: the future window is over, and every notification it
	// was owed has been sent.
	EndWindow = "window_over"
	// EndCancelled: unsubscribed; the notifications of publications
	// stamped before the cancel came first.
	EndCancelled = "cancelled"
	// EndMoved: a resume on another connection took it; nothing more
	// comes here.
	EndMoved = "moved"
	// EndBehind: the window ended while the connection was behind, so
	// notifications may be owed: resume from the last seq received, at
	// once (resume knows the subscription only a few seconds past its
	// window), to get them.
	EndBehind = "behind"
)

// EndReasons returns every reason a subscription ends.
func EndReasons() []string { return []string{EndWindow, EndCancelled, EndMoved, EndBehind} }
