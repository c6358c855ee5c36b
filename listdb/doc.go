// Package listdb keeps Cellcast's publication and subscription lists in the
// lsm engine: the binary fragment format, the lsm Merger that concatenates
// fragments, the compaction filter that drops expired records and
// cancelled subscriptions, a block property collector of each block's
// newest record time, and Store, the subscriptions.Store that both storage
// architectures share. dualdb and twodb only decide where lists live (the
// Backend): both lists of a cell side by side in one DB, or one DB each.
//
// A record on a cover of several cells is written under each of them. An
// operation on one cell reports a match with it only through the
// canonical pair of cells (cover.go); an operation on a cover takes each
// record it meets once, the first time, by its stamp, and reads each
// ancestor its cells share once (scan.go). Matching refines by the
// records' shapes (subscriptions.Match), unless Config.CellsOnly.
//
// Reads follow the thesis's Algorithm 1: a key's fragments are visited
// newest component first and the visit stops once a fragment is older than
// anything the query can still match.
//
// Writes are ordered, then made durable. Under Store.mu an operation takes
// its stamp and applies its record to the engine (visible, not yet
// durable), so records reach the engine in stamp order and an operation's
// read sees every record stamped before it. After releasing Store.mu it
// scans, then waits for the engine's WAL (Config.Durability: fsynced by
// default, or written to the OS), so concurrent operations share one
// fsync and none holds the lock while the disk works. The log is a
// prefix: whatever an operation read was durable before its own write
// (a backend of two engines makes it so with Commit.Read: see twodb).
//
// Lock order: Store.mu, then inflight.mu; the engine's locks (package lsm)
// are taken under either. Store.mu is held across a synced metadata write
// only when a high-water mark rises (rarely: marks move in whole seconds
// and depths) or the clock floor must be waited for; the floor is
// normally persisted in the background, ahead of need. The topic registry
// (dewey.Topics) has its own lock and never takes Store.mu.
package listdb
