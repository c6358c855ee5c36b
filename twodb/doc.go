// Package twodb is the TwoDB storage architecture (thesis 4.5.2): one lsm DB
// for publication lists and one for subscription lists, both keyed by
// namespace ‖ Dewey encoding. A self-join reads both DBs.
package twodb
