// Package peers holds benchmarks that run Cellcast's components next to the
// systems a user would pick instead (Pebble, goleveldb). It is a nested
// module so those peers stay out of Cellcast's own go.mod.
package peers
