// Package lsm is Cellcast's storage engine: a durable, concurrent, leveled
// log-structured merge tree on a VFS.
//
// Writes go to a write-ahead log (CRC-checked records, group commit, optional
// sync per write: once one asks, an fdatasync over zeros synced ahead) and a
// lock-free skiplist memtable; full memtables are flushed to L0 tables in the
// background, cut into the key slices of the base level, and a background
// compactor merges them down a slice at a time and on through L1…L6 (size
// ratio 10, leveled like LevelDB). L0 is read as sublevels, sorted runs of
// disjoint tables, as Pebble's is. The MANIFEST
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
// Checkpoint copies an open DB for a backup while writes go on: its
// tables hard-linked, the WALs still needed copied up to the moment of the
// call, and a fresh MANIFEST naming them.
//
// What this package must never do: know anything about Cellcast's records,
// silently return unverified bytes, or lose a write it acknowledged as synced.
//
// Lock order (a lock may be taken while holding those before it, never
// the other way round):
//
//  1. DB.compactMu — held for a whole compaction (and a manual Compact).
//  2. DB.manifestMu — held while a version edit is written to the MANIFEST;
//     taken with compactMu or alone (flushes), released before d.mu is
//     retaken for long.
//  3. DB.mu — the DB's state: memtables, versions, the commit queue, the
//     sticky error; bgCond, flushCond, compactCond and each writer's cond
//     wait on it. The commit leader releases it for the WAL write and the
//     memtable apply (writeGroup), so no fsync runs under it: a memtable
//     switch closes the old log on a goroutine of its own.
//  4. walWriter.flushMu — one write(2) or sync of the WAL at a time;
//     taken under d.mu only by Close (closing the last log). A log's
//     first flush waits, holding its flushMu, until the log before it is
//     closed (walWriter.prev), never the other way round.
//     WaitWAL reads d.log under d.mu and, after releasing it, waits for
//     the flush another waiter leads or leads one itself on flushMu.
//  5. walWriter.mu — the log's in-memory buffer; taken under flushMu or
//     alone (append). walWriter.waitMu — which waiter leads the next
//     flush; a leaf, held for no call.
//  6. DB.rsMu — the published read state; taken under d.mu or alone.
//
// The table cache and the block cache take their own short locks inside
// any of these and call nothing that locks. The flusher's error callback
// takes d.mu only after releasing flushMu.
package lsm
