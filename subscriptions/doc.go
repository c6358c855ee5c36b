// Package subscriptions is Cellcast's pub/sub core: the records
// (Subscription, Publication), the broker clock, the matching rule of
// docs/design.md with its geometry (geometry.go), the Store interface
// that the storage architectures (dualdb, twodb) implement, and Oracle, a
// brute-force in-memory Store with geometry of its own (oracle_geo.go)
// that tests, the load generator and benchmarks use as the reference.
//
// Time is int64 nanoseconds of the broker clock. Every operation gets its
// own stamp, strictly increasing, so a stamp also names the operation: a
// subscription's id is its Ts and namespaced cell, a publication's its Tp
// and cell. A record may lie on a cover of several cells (cover.go): its id
// names the first, and Canonical decides through which pair of cells a
// match of two records is reported.
//
// This package stores nothing and imports no storage engine.
package subscriptions
