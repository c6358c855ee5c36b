// Package pebbledual is DualDB's key layout on Pebble: the obvious store a
// user would build instead of Cellcast's engine. Each cell has a
// publication list and a subscription list under the same keys as in
// dualdb, appended with Pebble merges whose operator concatenates
// fragments newest first (listdb's merge). What Pebble does not offer is
// left out, as such a user would: reads get whole merged lists rather
// than fragments newest first (no early termination below the value), and
// expired records stay until the lists are rewritten (no expiry in
// compaction).
//
// It lives in the nested bench/peers module so Pebble stays out of the
// root go.mod.
package pebbledual
