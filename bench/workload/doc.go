// Package workload generates the moving-user workloads of the thesis's
// experiments (section 4.7) over real New York geography, and reads and
// writes them as trace files so a run can be repeated exactly.
//
// A workload is a sequence of operations, each with an offset from the
// start. Users start where people live (New York places weighted by
// population, with a scatter, mixed with ZIP code centroids) and walk at
// random; a SUBSCRIBE is a user who has just walked into a new cell, a
// PUBLISH an incident (accident, fire, roadwork, …) reported where a user
// stands, described by its kind and the nearest populated place. The same
// Config and seed always give the same operations.
//
// Cells come from one of four spaces:
//
//   - s2: the broker's world grid (package geo), the cell of the user's
//     point at an S2 level from MinLevel to Level (10 to 16 by default:
//     about 10 km down to 150 m), level i with probability ∝ 1/2^(Level−i);
//     what load against a broker or a cluster uses;
//   - grid, quad and circle: the thesis's storage experiments, on its own
//     maps of New York State: a flat 500×500 grid, a quad tree of depth d
//     with a level drawn with probability ∝ 1/2^(d−i), or circles of radius
//     4R, 2R, R, R/2 or R/4 mapped to the smallest quad-tree cell holding
//     them. Their cells are Dewey ids, which a broker accepts, but they
//     name no place on the world grid.
//
// The trace format is documented in trace.go.
package workload
