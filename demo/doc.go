// Package demo serves the geospatial alerting demo: a live map at the
// broker's root, opening on New York and working anywhere on Earth, with
// the broker's S2 grid, simulated moving users, "I am here" subscriptions,
// incidents drawn as their circles and polygons, the broker's metrics and
// the query op (docs/demo.md). The page and its data are embedded in the binary, built
// from ui/ by `make demo-ui`, so running the broker needs no Node.js and
// the page fetches nothing from any other host.
//
// The package only serves files; the page talks to the broker through the
// public protocol (WebSocket /ws, /metrics, /cells) like any other client,
// and must never get a private path into the broker.
package demo
