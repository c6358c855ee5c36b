// Package base holds the engine's internal key format shared by the memtable,
// the SSTables and the compaction code: a user key followed by an 8-byte
// trailer packing a sequence number and a kind.
//
// Internal keys sort by user key ascending, then by trailer descending, so the
// newest version of a user key comes first. Nothing here knows about files.
package base
