// Package demo serves the geospatial alerting demo: a live map of New York
// at the broker's root, with simulated moving users, "I am here"
// subscriptions, incidents, the broker's metrics and the query op
// (docs/demo.md). The page and its data are embedded in the binary, built
// from ui/ by `make demo-ui`, so running the broker needs no Node.js and
// the page fetches nothing from any other host.
//
// The package only serves files; the page talks to the broker through the
// public protocol (WebSocket /ws, /metrics) like any other client, and
// must never get a private path into the broker.
package demo
