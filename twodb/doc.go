// Package twodb is the TwoDB storage architecture (thesis 4.5.2): one lsm DB
// for publication lists and one for subscription lists, both keyed by
// namespace ‖ Dewey encoding. A self-join reads both DBs.
//
// Crashes. No operation writes records to both engines: a publish appends
// to the publications engine, a subscribe or cancel to the subscriptions
// engine, so neither engine can hold half of an acknowledged write. The
// store's metadata (clock floor, high-water marks, topic registry) lives in
// the publications engine only and is fsynced before any record that
// relies on it is applied, in either engine; there is one floor, not two
// to reconcile. What can differ is what an operation read: a subscribe
// reads the publications engine, where a publication may be applied
// (visible) while its own fsync is still pending. With one engine the log
// is a prefix and the subscribe's fsync covers it; with two it does not,
// so each commit notes where the other engine's log stood (Commit.Read)
// and Wait makes that durable too before the operation is answered. A
// crash therefore never loses a record that an acknowledged answer
// reported (TestCrashKeepsWhatAnAnswerReported).
package twodb
