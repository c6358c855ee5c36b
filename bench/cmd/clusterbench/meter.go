package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/seed84792017/cellcast/bench/procs"
)

// cpuTotal is the CPU time of every node's process so far.
func cpuTotal(nodes []*procs.Node) (float64, error) {
	total := 0.0
	for _, n := range nodes {
		s, err := procs.CPUSeconds(n.Cmd.Process.Pid)
		if err != nil {
			return 0, err
		}
		total += s
	}
	return total, nil
}

// clusterMessages sums, over every node's /metrics, the NATS messages
// the nodes sent each other, by kind: requests, replies, notification
// batches and log appends.
func clusterMessages(nodes []*procs.Node) map[string]float64 {
	total := map[string]float64{}
	for _, n := range nodes {
		resp, err := http.Get("http://" + n.HTTP + "/metrics")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			for _, m := range messageKinds {
				if v, ok := strings.CutPrefix(line, "cellcast_cluster_"+m+"_total "); ok {
					f, _ := strconv.ParseFloat(v, 64)
					total[m] += f
				}
			}
		}
		resp.Body.Close()
	}
	return total
}

var messageKinds = []string{"requests", "replies", "notification_batches", "log_appends"}

// meter measures the nodes over a run: its time, their CPU, the NATS
// messages between them and, for a cluster, the stream leader elections.
// Starting it also starts the profiles (-pprof).
type meter struct {
	nodes     []*procs.Node
	start     time.Time
	cpu0      float64
	msgs0     map[string]float64
	sent0     []float64      // each node's notifications written to clients
	watch     *electionWatch // nil for one node
	elections int64
}

func startMeter(nodes []*procs.Node) (*meter, error) {
	cpu0, err := cpuTotal(nodes)
	if err != nil {
		return nil, err
	}
	m := &meter{nodes: nodes, cpu0: cpu0, msgs0: clusterMessages(nodes), sent0: notificationsSent(nodes)}
	if len(nodes) > 1 {
		if m.watch, err = watchElections(nodes[0]); err != nil {
			return nil, err
		}
	}
	profile(nodes)
	m.start = time.Now()
	return m, nil
}

// stop returns the seconds since the start and the CPU-seconds spent.
func (m *meter) stop() (secs, cpu float64, err error) {
	secs = time.Since(m.start).Seconds()
	if m.watch != nil {
		m.elections = m.watch.stop()
	}
	cpu1, err := cpuTotal(m.nodes)
	return secs, cpu1 - m.cpu0, err
}

// messages fills r's NATS messages between nodes per publication, by
// kind and in all, since the start, and the elections stop counted.
func (m *meter) messages(r *result, publications int) {
	r.elections = m.elections
	msgs1 := clusterMessages(m.nodes)
	r.natsKinds = map[string]float64{}
	for _, k := range messageKinds {
		r.natsKinds[k] = (msgs1[k] - m.msgs0[k]) / float64(publications)
		r.natsMsgs += r.natsKinds[k]
	}
}

// written is how many notifications each node wrote to its clients since
// the start.
func (m *meter) written() []float64 {
	out := notificationsSent(m.nodes)
	for i := range out {
		out[i] -= m.sent0[i]
	}
	return out
}

// notificationsSent reads each node's count of notifications written to
// its WebSocket clients (0 for a node that does not answer).
func notificationsSent(nodes []*procs.Node) []float64 {
	out := make([]float64, len(nodes))
	for i, n := range nodes {
		out[i], _ = procs.Metric(n.HTTP, `cellcast_notifications_sent_total{transport="ws"}`)
	}
	return out
}

// profileDir, when set, receives CPU profiles of the brokers (-pprof),
// each profileFor long.
var (
	profileDir string
	profileFor time.Duration
)

// profile fetches a CPU profile of each node in the background, into
// profileDir as <node>.pprof.
func profile(nodes []*procs.Node) {
	if profileDir == "" {
		return
	}
	for _, n := range nodes {
		go func() {
			resp, err := http.Get("http://" + n.HTTP + "/debug/pprof/profile?seconds=" + fmt.Sprint(max(1, int(profileFor.Seconds()))))
			if err != nil {
				fmt.Fprintln(os.Stderr, "clusterbench: profile:", err)
				return
			}
			defer resp.Body.Close()
			f, err := os.Create(filepath.Join(profileDir, n.ID+".pprof"))
			if err == nil {
				io.Copy(f, resp.Body)
				f.Close()
			}
		}()
	}
}
