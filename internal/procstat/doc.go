// Package procstat reads this process's memory figures from /proc, for
// tests and benchmark runners that report resident set size.
package procstat
