// Package experiments reproduces the thesis's storage experiments (Fig.
// 4.8–4.15) on any subscriptions store: the moving-user workloads of
// bench/workload are run in process against each store with a simulated
// clock, and the mean time per operation is reported per chunk of
// operations, per operation kind, and cumulatively, as CSV, SVG plots and
// a markdown report that sets our ratios beside the thesis's.
//
// bench/cmd/pubsubbench runs it on DualDB, TwoDB and RepQueries; the
// peers module runs it on the Pebble-backed DualDB too.
package experiments
