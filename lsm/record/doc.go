// Package record is the log format shared by the write-ahead log and the
// manifest: a file of 32 KiB blocks, each record split into chunks that never
// cross a block boundary. A chunk is a 7-byte header (masked CRC-32C of type
// and payload, 2-byte length, 1-byte type) and its payload.
//
// Reading separates a torn tail from corruption. A crash can leave the last
// record half written; that is the end of the log, not an error. A chunk that
// fails its checksum while a valid chunk still follows somewhere later in the
// file is corruption: the reader returns a *CorruptionError naming the file and
// offset rather than skipping data silently.
//
// Zeros get the same rule. The writer pads only block tails too short for a
// header, so an all-zero header where a chunk should start is space the file
// system extended but never filled: the end of the log when nothing valid
// follows it (Torn stays false if only zeros follow), and corruption — zeroed
// records — when a valid chunk starts anywhere after it.
//
// A log written over space zeroed and synced beforehand (the WAL of a DB that
// syncs, so that fdatasync need not commit a new file size) says so with a
// mark, an empty chunk of its own type (Writer.MarkPreallocated). Its writer syncs at most
// PreallocWindow bytes at a time, and a crash during that sync may have put
// the pages on disk in any order; from the mark on, bad bytes followed by
// good chunks are a torn tail unless a good chunk starts PreallocWindow or
// more bytes past them.
package record
