package main

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/seed84792017/cellcast/bench/procs"
)

// brokerProc is the broker under test.
type brokerProc struct {
	*procs.Single
	addr string
}

func startBroker(s setup) (*brokerProc, error) {
	args := []string{"--cover", strconv.Itoa(s.cover), "--max-subscriptions", strconv.Itoa(*nSubs + 1000),
		"--rate", "1e9", "--burst", "1000000000", "--log-level", "warn", "--pprof"}
	if s.cellsOnly {
		args = append(args, "--bench-cells-only")
	}
	p, err := procs.StartBroker(*brokerBin, "geobench", nil, args...)
	if err != nil {
		return nil, err
	}
	return &brokerProc{Single: p, addr: p.HTTP}, nil
}

func (b *brokerProc) stop() { b.Stop(false) }

// profile saves a CPU profile of the broker over d.
func (b *brokerProc) profile(path string, d time.Duration) {
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", b.addr, max(int(d.Seconds()), 1)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		return
	}
	defer f.Close()
	f.ReadFrom(resp.Body)
}
