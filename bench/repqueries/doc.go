// Package repqueries is the RepQueries baseline of thesis 4.5.1, for
// comparisons only: a publications database alone. SUBSCRIBE runs a
// historic query and then re-runs it every T_R until the subscription
// expires; PUBLISH only writes, so nothing is delivered instantly.
package repqueries
