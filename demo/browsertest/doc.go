// Package browsertest drives the demo page (package demo) in headless
// Chromium against a real broker: the page loads from the broker alone,
// draws the map, connects, and shows an incident published from outside
// to a viewer who then moves, once, until it expires. With -demo.perf it
// measures frames per second, load time and heap (docs/demo.md).
//
// It is a module of its own so that the root module does not carry the
// browser driver; `make browser` runs it, and .ci/run installs Chromium.
package browsertest
