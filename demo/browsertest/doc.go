// Package browsertest drives the demo page (package demo) in headless
// Chromium against a real broker: the page loads from the broker alone,
// draws the world, New York and the broker's own grid, connects, and lists
// in "My alerts" exactly the incidents that meet the viewer's circle, with
// their haversine distances, in New York and in Paris; a zone is drawn as
// its polygon and a click on it says what, who and how long. Untouched,
// the page shows its own random incidents within 10 s, a click on one
// reads its description, and the simulated users stay on land. The JS
// client's example page (clients/js/examples/alerts.html) shows an alert
// published near the position Chromium reports, and another after the
// broker is killed and restarted under it. With
// -demo.perf it measures frames per second, load time and heap
// (docs/demo.md).
//
// It is a module of its own so that the root module does not carry the
// browser driver; `make browser` runs it, and .ci/run installs Chromium.
package browsertest
