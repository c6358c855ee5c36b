// Package owed is the load generator's completeness oracle: it walks a
// run's acknowledged operations, with the stamps the broker gave them, in
// stamp order and names every (publication, subscription) pair the broker
// owes — a live notification, or a past result in a SUBSCRIBE's reply — by
// the matching rule of docs/design.md ("Semantics"), written out again here from the spec.
//
// It never materialises the pairs: Walk hands each one to a callback, and
// a Tally keeps per subscription a count and two sums of hashes of the
// publications' stamps, so checking 100 M pairs takes memory proportional
// to the operations, not to the pairs. Two tallies, one of the pairs owed
// and one of the pairs received, agree for a subscription when it got each
// owed publication exactly once and nothing else (a missing notification
// and a duplicate of another leave the count equal but the sums not; two
// independent 64-bit sums make a chance match negligible). Only the
// subscriptions whose tallies differ are then checked pair by pair.
//
// The package must not import any of the code it checks (the broker, the
// gateway, delivery, the stores, lsm, the matching rule in subscriptions,
// dewey): a test asserts its imports are the standard library's.
package owed
