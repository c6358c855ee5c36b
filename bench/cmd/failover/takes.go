package main

import (
	"bufio"
	"os"
	"strings"
	"time"

	"github.com/seed84792017/cellcast/bench/procs"
)

// slowestTake reads the nodes' logs for the shard takes they logged
// ("cluster: shard taken", with how long the take ran: opening the log,
// replaying it, appending the owner's record) between from and to, and
// returns the longest and how many there were. A standby owner, one that
// kept a shard's store up to date from its log, would save at most the
// take; the rest of a failover is noticing the death.
func slowestTake(c *procs.Cluster, from, to time.Time) (time.Duration, int) {
	var slowest time.Duration
	n := 0
	for _, nd := range c.Nodes {
		f, err := os.Open(c.LogPath(nd))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			at, took, ok := parseTake(sc.Text())
			if ok && !at.Before(from) && !at.After(to) {
				n++
				slowest = max(slowest, took)
			}
		}
		f.Close()
	}
	return slowest, n
}

// parseTake reads a take's time and duration from a broker's text log
// line (time=… level=INFO msg="cluster: shard taken" shard=g3 took=…).
func parseTake(line string) (at time.Time, took time.Duration, ok bool) {
	if !strings.Contains(line, `msg="cluster: shard taken"`) {
		return at, 0, false
	}
	var terr, derr error = os.ErrNotExist, os.ErrNotExist
	for _, f := range strings.Fields(line) {
		switch {
		case strings.HasPrefix(f, "time="):
			at, terr = time.Parse(time.RFC3339Nano, strings.TrimPrefix(f, "time="))
		case strings.HasPrefix(f, "took="):
			took, derr = time.ParseDuration(strings.TrimPrefix(f, "took="))
		}
	}
	return at, took, terr == nil && derr == nil
}
