// Package natspeer carries a moving-user workload over NATS core the way a
// NATS user would build it, as the peer that the broker's throughput is
// compared with: a subject per cell, a token per Dewey component
// (cell.4.1.3 for the world grid's cells: face + 1, then child positions
// + 1, so an S2 cell of level L has L+1 tokens); a subscriber listens on
// its cell's subject, on each ancestor's, and on <cell>.> for everything
// below; a publisher publishes on its cell's subject. Each publication
// thus reaches each subscription in an overlapping cell once, as in
// Cellcast, but NATS core stores nothing: no past results, no replay, and
// a slow consumer loses messages.
//
// A subscription ends when its future window has passed. The run is
// closed-loop like loadgen's: each connection has at most Window
// operations in flight, and a flush (a PING/PONG round trip, the only
// acknowledgement NATS core gives) ends each window.
package natspeer
