// Package listdb keeps Cellcast's publication and subscription lists in the
// lsm engine: the binary fragment format, the lsm Merger that concatenates
// fragments, the compaction filter that drops expired records and
// cancelled subscriptions, a block property collector of each block's
// newest record time, and Store, the subscriptions.Store that both storage
// architectures share. dualdb and twodb only decide where lists live (the
// Backend): both lists of a cell side by side in one DB, or one DB each.
//
// Reads follow the thesis's Algorithm 1: a key's fragments are visited
// newest component first and the visit stops once a fragment is older than
// anything the query can still match.
package listdb
