// Package secondary is a table over the lsm engine with lookups on
// non-key attributes: Put, Get and Delete by primary key, and Lookup and
// RangeLookup returning the K most recent live rows whose attribute has a
// value or lies in a range (Qader et al., SIGMOD 2018).
//
// Each indexed attribute picks a strategy:
//
//   - Embedded: no index of its own; block property collectors summarize
//     each block of the primary table by a bloom filter and a zone map of
//     the attribute, each table by a zone map, and a lookup scans the rows
//     skipping whatever the summaries rule out (embedded.go).
//
// The stand-alone indexes, each an lsm store of its own beside the
// primary table:
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
//   - DELI: entries appended like Composite's, keyed newest first, and
//     repaired: the primary table's compaction deletes the entries of the
//     row versions it drops, and lookups delete the stale ones they meet
//     (deli.go).
//
//   - BloomHierarchy: each table of the primary carries a fixed-size bloom
//     filter of the attribute; the filters form a tree of order 4 whose
//     inner nodes OR their children, and a Lookup probes only the subtrees
//     that admit the value before reading the tables left, as Embedded
//     does. RangeLookup uses the zone maps (bfh.go).
//
// Embedded (and the hierarchy) keep the memtable's rows in a small
// in-memory map (memindex.go) and read the tables one at a time, newest
// first, stopping before tables older than the k-th current row. A
// candidate that no skipped memtable, block or table may shadow (lsm's
// MayBeShadowed: memtables and bloom filters, no data block) is current
// without a Get — the study's GetLite.
package secondary
