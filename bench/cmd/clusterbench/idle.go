package main

import (
	"fmt"
	"path/filepath"
	"time"
)

// idle measures what three idle nodes cost: raft heartbeats, lease
// renewals and probes. It starts the cluster, lets its shards settle for
// settle, and reads the nodes' CPU over d (and profiles them, -pprof).
func idle(bin string, d, settle time.Duration, keep bool) error {
	dir, bin, done, err := prepare(bin, keep)
	if err != nil {
		return err
	}
	defer done()
	var args []string
	if profileDir != "" {
		args = append(args, "--pprof")
	}
	c, err := startNodes(bin, filepath.Join(dir, "cluster"), args...)
	if err != nil {
		return err
	}
	defer c.Stop()
	time.Sleep(settle)
	cpu0, err := cpuTotal(c.Nodes)
	if err != nil {
		return err
	}
	start := time.Now()
	profile(c.Nodes)
	time.Sleep(d)
	cpu1, err := cpuTotal(c.Nodes)
	if err != nil {
		return err
	}
	fmt.Printf("three idle nodes: %.3f CPU-s per second over %v\n", (cpu1-cpu0)/time.Since(start).Seconds(), d)
	return nil
}
