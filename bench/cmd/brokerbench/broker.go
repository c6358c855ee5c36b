package main

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/seed84792017/cellcast/bench/procs"
	"github.com/seed84792017/cellcast/internal/procstat"
)

// brokerProc is the broker under test.
type brokerProc struct {
	*procs.Single
	addr string
}

func startBroker() (*brokerProc, error) {
	s, err := procs.StartBroker(*brokerBin, "brokerbench", strings.Fields(*brokerEnv),
		"--storage", *storage, "--geo-level", strconv.Itoa(*geoLevel),
		"--max-subscriptions", strconv.Itoa(*nSubs+1000), "--rate", "1e9", "--burst", "1000000000",
		"--log-level", "warn", "--pprof")
	if err != nil {
		return nil, err
	}
	return &brokerProc{Single: s, addr: s.HTTP}, nil
}

func (b *brokerProc) rss() (now, peak float64) {
	return procstat.ProcessRSSMiB(b.Cmd.Process.Pid), procstat.ProcessPeakRSSMiB(b.Cmd.Process.Pid)
}

func (b *brokerProc) stop() { b.Stop(*keep) }

// fetchProfile saves a CPU profile of the broker.
func fetchProfile(addr string, d time.Duration) {
	fetch(addr, fmt.Sprintf("profile?seconds=%d", int(d.Seconds())), *profile)
}

// fetch saves one of the broker's pprof profiles.
func fetch(addr, what, path string) {
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/%s", addr, what))
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

// serverLatency reads the broker's publish→push histogram (stamp to the
// flush of the notification) and returns the bucket bounds holding its
// median and 99th percentile.
func serverLatency(addr string) (p50, p99 float64) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return -1, -1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	type bucket struct{ le, n float64 }
	var bs []bucket
	for _, line := range strings.Split(string(body), "\n") {
		rest, ok := strings.CutPrefix(line, `cellcast_publish_to_push_seconds_bucket{le="`)
		if !ok {
			continue
		}
		le, n, _ := strings.Cut(rest, `"} `)
		l, err1 := strconv.ParseFloat(le, 64)
		c, err2 := strconv.ParseFloat(n, 64)
		if err1 == nil && err2 == nil {
			bs = append(bs, bucket{l, c})
		}
	}
	if len(bs) == 0 {
		return -1, -1
	}
	total := bs[len(bs)-1].n
	q := func(f float64) float64 {
		for _, b := range bs {
			if b.n >= f*total {
				return b.le
			}
		}
		return math.Inf(1)
	}
	return q(0.5), q(0.99)
}
