// Package catalog keeps the attributes of every live publication in a
// secondary table (package secondary), so clients can ask for the latest
// K publications by publisher, category or creation time without knowing
// the cell:
//
//	"latest 10 publications where uid = alice"
//	"latest 50 where category = flood"
//	"latest 100 where 2026-11-21T10:00Z ≤ tp ≤ 2026-11-21T11:00Z"
//
// The attributes a catalog can index are the publisher ("uid"), the
// creation time ("tp"), and any key of a publication's attrs, such as
// "category"; each indexed attribute names its strategy
// (ParseIndexes: "uid=composite,category=composite,tp=embedded").
//
// A publication is catalogued when it is published and leaves when it
// expires: a janitor deletes expired rows every second through an index
// on the expiry, and queries never return a publication past its expiry
// even before the janitor gets to it.
//
// The catalog is written after the store, so a crash can leave them apart:
// a stored (even acknowledged) publication not catalogued, or a row whose
// store write never became durable. Reconcile, run once after both are
// opened, scans the store's live publications (listdb.Store is a Source)
// and mends the catalog both ways.
package catalog
