// Package secondary is a table over the lsm engine with lookups on
// non-key attributes: Put, Get and Delete by primary key, and Lookup and
// RangeLookup returning the K most recent live rows whose attribute has a
// value or lies in a range (Qader et al., SIGMOD 2018).
//
// Each indexed attribute picks a strategy. This first step holds the three
// stand-alone indexes of the study, each an lsm store of its own beside
// the primary table:
//
//   - Eager: one posting list per value, read, modified and written back
//     on every Put (and Delete) of a row carrying the value.
//   - Lazy: posting-list fragments appended with lsm merges and joined in
//     compaction; a Lookup reads fragments newest first and stops as soon
//     as K live rows are found.
//   - Composite: one key per (value, primary key); Lookup is a prefix
//     scan, RangeLookup a range scan.
//
// Every index entry carries the row's sequence number. An entry is valid
// only while the primary table holds the row with that same sequence
// number, so an update or delete makes older entries stale without
// touching them, and no strategy returns a stale row.
//
// Not yet here: the Embedded index (per-block bloom filters and zone maps
// in the primary table), DELI, the Bloom filter hierarchy, and the broker
// wiring.
package secondary
