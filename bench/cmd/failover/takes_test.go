package main

import (
	"testing"
	"time"
)

// TestParseTake reads a take from a broker's log line and nothing from
// other lines.
func TestParseTake(t *testing.T) {
	at, took, ok := parseTake(`time=2026-11-28T13:13:14.473Z level=INFO msg="cluster: shard taken" shard=g5 took=123.456ms`)
	if want := time.Date(2026, 11, 28, 13, 13, 14, 473e6, time.UTC); !ok || !at.Equal(want) || took != 123456*time.Microsecond {
		t.Fatalf("got %v %v %v", at, took, ok)
	}
	for _, line := range []string{
		`time=2026-11-28T13:13:14.473Z level=INFO msg="cluster: shard released for balance" shard=g5`,
		`time=2026-11-28T13:13:14.473Z level=INFO msg="cluster: shard taken" shard=g5`,
		`level=INFO msg="cluster: shard taken" shard=g5 took=1s`,
	} {
		if _, _, ok := parseTake(line); ok {
			t.Fatalf("a take read from %q", line)
		}
	}
}
