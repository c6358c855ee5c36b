// Package service is Cellcast's transport-free pub/sub core: the store,
// the delivery hub, the expiry of routes and the catalog write, behind
// the five operations of the protocol (Subscribe, Publish, Unsubscribe,
// Resume, Query). Transports (package gateway) decode, authenticate,
// locate and render, and hand operations here; a cluster node will run one
// Service for the shards it owns.
//
// A Service takes ownership of the store and the catalog it is given:
// Close dispatches what is owed, then flushes and closes both.
//
// Publish files a publication in the catalog after it is stored and
// released to the dispatcher, so a slow catalog write never holds back
// the notifications of later publications; the publisher's answer still
// waits for it, so a query after `published` finds the publication.
//
// The Service holds no lock of its own; delivery.Hub's lock order applies.
package service
