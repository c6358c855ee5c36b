// Package lsm is Cellcast's storage engine: a durable, concurrent, leveled
// log-structured merge tree on a VFS.
//
// Writes go to a write-ahead log (CRC-checked records, group commit, optional
// fsync per write) and a lock-free skiplist memtable; full memtables are
// flushed to L0 tables in the background, and a background compactor merges
// them down through L1…L6 (size ratio 10, leveled like LevelDB). The MANIFEST
// log plus CURRENT name the live files; reopening replays it and the WAL.
//
// Beyond Get, Set and Delete, the engine keeps value lists: Merge appends a
// fragment to a key without reading it. Fragments are concatenated newer-first
// by the Merger during flush and compaction, and a CompactionFilter sees every
// merged value there and may drop or rewrite it (Cellcast drops expired list
// records). VisitKey and VisitRange walk a key's fragments component by
// component, newest to oldest, and stop when the caller has seen enough — the
// early termination the pub/sub layer relies on. Block property collectors
// summarize each block and table so scans can skip them.
//
// What this package must never do: know anything about Cellcast's records,
// silently return unverified bytes, or lose a write it acknowledged as synced.
//
// Lock order: DB.compactMu, then DB.manifestMu, then DB.mu; the table cache
// and block cache take their own short locks inside any of them.
package lsm
