// Package sstable writes and reads the engine's immutable sorted tables.
//
// Layout of a table file:
//
//	data block 0 … data block n-1   sorted internal keys, 4 KiB by default
//	filter block                    bloom filter over the table's user keys
//	properties block                counts, sequence range, collector summaries
//	index block                     per data block: last key, handle, block properties
//	footer (64 bytes)               handles of filter, properties and index;
//	                                format version; footer checksum; magic
//
// Every block is followed by a 5-byte trailer: the compression type (none or
// snappy) and a masked CRC-32C of the stored bytes and that type. Keys inside
// a block are prefix-compressed against the previous key, with a restart point
// (a full key) every 16 entries so a seek can binary-search.
//
// Block property collectors see every entry written and store a small summary
// per data block (in its index entry) and per table (in the properties block);
// a reader given matching filters skips tables and blocks whose summaries say
// nothing inside can match, without reading them.
//
// A table that fails any check yields a *base.CorruptionError naming the file
// and the offset of the bad block; readers never return unverified bytes.
package sstable
