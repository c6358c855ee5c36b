// Package dualdb is the DualDB storage architecture (thesis 4.5.3): one lsm
// DB holds both lists of every cell under keys namespace ‖ Dewey encoding ‖
// flag (0 publications, 1 subscriptions). The flag sorts below every Dewey
// component byte, so a cell's two lists sit side by side in the same block
// and its whole subtree is one key range; a self-join reads both lists in one
// pass.
package dualdb
