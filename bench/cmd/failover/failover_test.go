package main

import (
	"flag"
	"os"
	"testing"
)

var kill9 = flag.Bool("kill9", false, "run three broker processes and kill -9 them (about a minute)")

// TestKill9 kills one of three real broker processes under load and checks
// completeness: go test ./bench/cmd/failover -kill9 -v
func TestKill9(t *testing.T) {
	if !*kill9 {
		t.Skip("needs -kill9: builds the broker and runs three processes")
	}
	wd, _ := os.Getwd()
	if err := os.Chdir("../../.."); err != nil { // the repository root, to build ./cmd/broker
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	if err := run("", 0, false, 4000, 200, false, ""); err != nil {
		t.Fatal(err)
	}
}
