// Package delivery turns the store's answers into pushed notifications: it
// routes each matched subscription to the sink (a WebSocket connection, a
// NATS subject) that currently holds it, in stamp order, and resumes a
// subscription on a new sink by replaying what the store still holds.
//
// The guarantees, for a subscription S:
//
//   - Notifications of S leave in increasing publication stamp, and the
//     sequence number of a notification is Tp − Ts, so it increases too and
//     means the same after a restart.
//   - A publication reaches S's sink exactly once when S's sink stays up:
//     the past results of SUBSCRIBE hold the publications stamped before S,
//     the notifications those stamped after it, with nothing dropped or
//     repeated at the boundary.
//   - After a disconnect, Resume(sid, after) replays every publication of S
//     with a sequence number above `after` that has not expired, then hands
//     S to the new sink: the replay covers everything stamped before the
//     resume's stamp, live delivery everything after.
//
// Ordering comes from a sequencer. Each operation takes a lower bound from
// the store's clock before it reaches the store, so its stamp is above the
// bound; a finished publication is dispatched only when no PUBLISH with a
// lower bound below its stamp is still running; a dispatcher goroutine
// then fans it out under the route lock's read side, a sink at a time: a
// publication's matches are grouped by sink in one pass over the routes,
// and a BatchSink takes its share in one call (fanout.go). Sinks only
// queue (Sink.Notify and BatchSink.NotifyBatch do no I/O), so a fan-out
// holds up the operations that change routes (attach, Expire,
// Unsubscribe) for its enqueues alone, never for a slow socket. Publications do not wait for a running
// SUBSCRIBE or RESUME, whose past results may take a while: the hub keeps
// what it dispatched since the oldest of those began, and a new route
// catches up from there when it attaches. The route holds its
// notifications until its operation has answered, so the answer comes
// first.
//
// Sinks never block the hub. A sink that cannot take a notification says
// so, and its route turns lagging: the dispatcher skips it, and once the
// sink has room it calls CatchUp, which replays what the route missed from
// the store (as Resume does) and routes it live again (lag.go). So a slow
// reader costs a bounded queue, and loses nothing that has not expired.
// Publish refuses with an *OverloadedError while the notifications owed
// and not yet dispatched exceed Config.MaxBacklog or MaxBacklogBytes, and
// while subscribers are behind together (a quarter of the sinks holding
// routes behind for over Config.MaxLag and still catching up), since what
// they missed would expire in the store if publications kept coming.
//
// Locks. Hub.mu (routes, lagging routes and when each sink last caught
// up, recent dispatches), the
// sequencer's mu and Hub.dmu (the dispatcher's queue) are never held
// together. Under Hub.mu (read by the dispatcher, written by attach, open,
// Expire, Detach and CatchUp) the hub calls Config.Encode, Sink.Notify
// and BatchSink.NotifyBatch:
// both may take only locks of their own that they never hold while calling
// the hub. Sink.Ended and the operations' answer callbacks run with no hub
// lock held.
package delivery
