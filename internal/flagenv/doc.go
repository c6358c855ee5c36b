// Package flagenv parses command-line flags that each fall back to a
// CELLCAST_* environment variable, for the broker and the cellcast CLI.
package flagenv
