// Package memtable is the engine's in-memory write buffer: a skiplist written
// by one goroutine at a time (the commit leader) and read by any number of
// goroutines without locks. Readers never block on the writer; every pointer a
// reader follows is published with an atomic store after the node it points to
// is complete.
//
// A Merge of a key whose newest entry here is already a merge node is appended
// in place: the node keeps a chain of fragments, newest first, each stamped
// with its own sequence number, so snapshot readers still see exactly the
// fragments at or below their sequence number. Iteration expands the chain into
// one internal entry per fragment.
package memtable
