// Package buildinfo says which build of Cellcast is running: the module
// version and the VCS revision the Go toolchain stamped into the binary.
// `--version` prints it, the broker logs it at start and exports it as the
// cellcast_build_info metric.
package buildinfo
