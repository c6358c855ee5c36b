// Package flagenv parses command-line flags that each fall back to a
// CELLCAST_* environment variable and, for ParseWith given a config flag,
// to a key of the same name in a TOML config file, for the broker and the
// cellcast CLI.
package flagenv
