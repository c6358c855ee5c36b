// Package places draws points where New Yorkers are: the state's places
// (GeoNames, see README.md) weighted by population, each point scattered
// around its place by a spread that grows with the place. Benchmarks and
// the load generator use it for realistic, skewed spatial workloads.
package places
