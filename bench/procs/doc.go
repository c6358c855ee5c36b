// Package procs starts and stops the processes the benchmark commands
// measure: the broker built from this repository and a nats-server.
package procs
