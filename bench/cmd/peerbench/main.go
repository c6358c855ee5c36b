// Command peerbench runs one moving-user workload, closed loop, against
// NATS core (a nats-server process, bench/natspeer) and against the broker
// in each durability mode, in the same session, and prints their
// throughput side by side with the ratio to NATS core.
//
//	go run ./bench/cmd/peerbench                 # 10k users, 3:1, 16 in flight
//	go run ./bench/cmd/peerbench -ratio 0.333    # publication-heavy
//
// Issue 38's workload (docs/broker-benchmarks.md, "In step with NATS
// core"): 4 subscriber connections, durable, 1:3 and 3:1, about 30 s:
//
//	go run ./bench/cmd/peerbench -broker /tmp/broker -conns 4 -ratio 0.333 -ops 300000 -durability sync
//	go run ./bench/cmd/peerbench -broker /tmp/broker -conns 4 -ratio 3 -ops 300000 -durability sync
//
// Each row gives the server process's CPU seconds over its run and its
// CPU µs per notification delivered; -separate has Cellcast's subscribers
// ask for one frame per notification, -cpuprofile saves the broker's
// profile.
//
// The workload is bench/workload's s2 space, as cmd/loadgen's: S2 cells
// over New York from -min-level (10, about 10 km) to -level (16, about
// 150 m), which replace the quad tree's -depth. On NATS a cell is a
// subject per level (bench/natspeer), so a subscription at level L listens
// on L+2 subjects.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/seed84792017/cellcast/bench/loadgen"
	"github.com/seed84792017/cellcast/bench/natspeer"
	"github.com/seed84792017/cellcast/bench/procs"
	"github.com/seed84792017/cellcast/bench/workload"
)

var (
	users      = flag.Int("users", 10_000, "moving users")
	ratio      = flag.Float64("ratio", 3, "subscriptions per publication")
	nOps       = flag.Int("ops", 100_000, "operations")
	level      = flag.Int("level", workload.DefaultS2Level, "the finest S2 level, where moves are told and the deepest cells lie (16: about 150 m)")
	minLevel   = flag.Int("min-level", workload.DefaultS2MinLevel, "the shallowest S2 level, level i drawn ∝ 1/2^(level−i) (10: about 10 km)")
	window     = flag.Int("window", 16, "requests in flight per connection")
	ahead      = flag.Int("ahead", -1, "operations handed out and unanswered across all connections, for every system (-1: window × connections; 0: no bound)")
	conns      = flag.Int("conns", 16, "subscriber connections")
	pubConns   = flag.Int("pubconns", 4, "publisher connections")
	runs       = flag.Int("runs", 1, "rounds of every system, alternated")
	natsBin    = flag.String("nats-server", "", "nats-server binary (default .tools/nats-server, then $PATH)")
	brokerBin  = flag.String("broker", "", "broker binary (default: build ./cmd/broker)")
	durability = flag.String("durability", "sync,os", "the broker's durability modes to run, comma-separated")
	seed       = flag.Int64("seed", 1, "workload seed")
	separate   = flag.Bool("separate", false, "Cellcast's subscribers ask for one frame per notification, not grouped frames")
	profile    = flag.String("cpuprofile", "", "write the broker's CPU profile of each run to this path prefix (<prefix>-<round>-<mode>.pprof)")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "peerbench:", err)
		os.Exit(1)
	}
}

type row struct {
	system      string
	opsPerSec   float64
	notesPerSec float64
	// deliveredPerSec adds past results to notifications: in a closed
	// loop the split between the two follows the timing.
	deliveredPerSec float64
	p50, p99        float64
	complete, notes string
	// cpu is the server process's CPU seconds (user and system) over the
	// run; usPerNote that over the notifications delivered, in µs.
	cpu, usPerNote float64
	// clientCPU is the load generator's (this process's) CPU seconds
	// over the run: on a small machine it competes with the server.
	clientCPU float64
}

func run() error {
	if *ahead < 0 {
		*ahead = *window * (*conns + *pubConns)
	}
	if *level < 1 {
		return fmt.Errorf("-level %d: use 1 to 30", *level)
	}
	g, err := workload.New(workload.Config{Seed: *seed, Ops: *nOps, Users: *users, SubsPerPub: *ratio, Space: workload.S2,
		MinLevel: *minLevel, Level: *level})
	if err != nil {
		return err
	}
	ops := g.All()
	dir, err := os.MkdirTemp("", "peerbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	nats, err := procs.NATSServer(*natsBin)
	if err != nil {
		return err
	}
	broker, err := procs.Broker(*brokerBin, dir)
	if err != nil {
		return err
	}
	modes := strings.Split(*durability, ",")
	var rows []row
	for r := range *runs {
		fmt.Fprintf(os.Stderr, "round %d: NATS core\n", r+1)
		nr, err := runNATS(nats, ops)
		if err != nil {
			return err
		}
		rows = append(rows, nr)
		for _, m := range modes {
			fmt.Fprintf(os.Stderr, "round %d: cellcast --durability %s\n", r+1, m)
			prof := ""
			if *profile != "" {
				prof = fmt.Sprintf("%s-%d-%s.pprof", *profile, r+1, m)
			}
			cr, err := runBroker(broker, filepath.Join(dir, fmt.Sprint("data-", r, "-", m)), m, ops, prof)
			if err != nil {
				return err
			}
			rows = append(rows, cr)
		}
	}
	bound := "no bound across connections"
	if *ahead > 0 {
		bound = fmt.Sprintf("at most %d unanswered in all", *ahead)
	}
	frames := "grouped"
	if *separate {
		frames = "separate"
	}
	fmt.Printf("%d users, %d operations, %g subscriptions per publication, S2 levels %d to %d, closed loop, %d in flight per connection, %d+%d connections, %s, %s notifications\n\n",
		*users, len(ops), *ratio, *minLevel, *level, *window, *conns, *pubConns, bound, frames)
	fmt.Println("| system | ops/s | notifications/s | vs NATS core (same round) | notifications + past results /s | p50 ms | p99 ms | server CPU s | CPU µs per notification | vs NATS core | client CPU s | complete | notes |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
	var base, baseCPU float64
	for _, r := range rows {
		if r.system == "NATS core" {
			base, baseCPU = r.notesPerSec, r.usPerNote
		}
		fmt.Printf("| %s | %.0f | %.0f | %.2f× | %.0f | %.1f | %.1f | %.1f | %.2f | %.2f× | %.1f | %s | %s |\n", r.system, r.opsPerSec, r.notesPerSec, r.notesPerSec/base,
			r.deliveredPerSec, r.p50, r.p99, r.cpu, r.usPerNote, r.usPerNote/baseCPU, r.clientCPU, r.complete, r.notes)
	}
	return nil
}

func runNATS(bin string, ops []workload.Op) (row, error) {
	addr, err := procs.FreeAddr()
	if err != nil {
		return row{}, err
	}
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "-a", host, "-p", port)
	if err := cmd.Start(); err != nil {
		return row{}, err
	}
	defer procs.Stop(cmd)
	url := "nats://" + addr
	if err := procs.WaitTCP(addr); err != nil {
		return row{}, err
	}
	cpu0, _ := procs.CPUSeconds(cmd.Process.Pid)
	self0 := selfCPU()
	rep, err := natspeer.Run(context.Background(), natspeer.Config{URL: url, Ops: ops, Conns: *conns, PubConns: *pubConns, Window: *window, Ahead: *ahead})
	if err != nil {
		return row{}, err
	}
	cpu1, err := procs.CPUSeconds(cmd.Process.Pid)
	if err != nil {
		return row{}, err
	}
	return row{system: "NATS core", opsPerSec: rep.OpsPerSec, notesPerSec: rep.NotesPerSec, deliveredPerSec: rep.NotesPerSec, p50: rep.LatencyMs[0], p99: rep.LatencyMs[1],
		cpu: cpu1 - cpu0, usPerNote: perNote(cpu1-cpu0, rep.Notifications), clientCPU: selfCPU() - self0,
		complete: "not checked (no past results, nothing stored)", notes: fmt.Sprintf("%d dropped as slow consumers", rep.Dropped)}, nil
}

// selfCPU is this process's CPU seconds so far.
func selfCPU() float64 {
	s, _ := procs.CPUSeconds(os.Getpid())
	return s
}

// perNote is cpu seconds over n notifications, in µs.
func perNote(cpu float64, n int64) float64 {
	if n == 0 {
		return 0
	}
	return cpu * 1e6 / float64(n)
}

func runBroker(bin, data, mode string, ops []workload.Op, prof string) (row, error) {
	httpAddr, err := procs.FreeAddr()
	if err != nil {
		return row{}, err
	}
	natsAddr, err := procs.FreeAddr()
	if err != nil {
		return row{}, err
	}
	args := []string{"--data", data, "--http", httpAddr, "--nats-listen", natsAddr, "--durability", mode,
		"--rate", "1e9", "--burst", "1000000000", "--max-subscriptions", strconv.Itoa(len(ops)), "--log-level", "warn"}
	if prof != "" {
		args = append(args, "--pprof")
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return row{}, err
	}
	defer procs.Stop(cmd)
	if err := procs.WaitReady(httpAddr); err != nil {
		return row{}, err
	}
	cpu0, _ := procs.CPUSeconds(cmd.Process.Pid)
	self0 := selfCPU()
	profDone := make(chan error, 1)
	stopProf := make(chan struct{})
	if prof != "" {
		go func() {
			profDone <- fetchProfile("http://"+httpAddr+"/debug/pprof/profile?seconds=600", prof, stopProf)
		}()
	}
	rep, err := loadgen.Run(context.Background(), loadgen.Config{WSURLs: []string{"ws://" + httpAddr + "/ws"}, MetricsURL: "http://" + httpAddr + "/metrics",
		Ops: ops, Closed: true, Conns: *conns, PubConns: *pubConns, Window: *window, Ahead: *ahead, Seed: *seed, Separate: *separate})
	if err != nil {
		return row{}, err
	}
	cpu1, err := procs.CPUSeconds(cmd.Process.Pid)
	if err != nil {
		return row{}, err
	}
	if prof != "" {
		close(stopProf)
		if err := <-profDone; err != nil {
			fmt.Fprintln(os.Stderr, "peerbench: profile:", err)
		}
	}
	c := rep.Completeness
	complete := fmt.Sprintf("100%% of %d live + %d past", c.ExpectedLive, c.ExpectedPast)
	if !c.OK() {
		complete = fmt.Sprintf("INCOMPLETE: %d missing, %d duplicates, %d unexpected", c.Missing, c.Duplicates, c.Unexpected)
	}
	notes := fmt.Sprintf("%d past results", rep.PastResults)
	if len(rep.Errors) > 0 {
		notes += fmt.Sprintf("; errors %v", rep.Errors)
	}
	return row{system: "cellcast, " + mode, opsPerSec: rep.OpsPerSec, notesPerSec: rep.NotesPerSec,
		deliveredPerSec: float64(rep.Notifications+rep.PastResults) / rep.Seconds, p50: rep.Latency.P50, p99: rep.Latency.P99,
		cpu: cpu1 - cpu0, usPerNote: perNote(cpu1-cpu0, int64(rep.Notifications)), clientCPU: selfCPU() - self0,
		complete: complete, notes: notes}, nil
}

// fetchProfile writes the broker's CPU profile in 5-second pieces,
// path.1, path.2, … (go tool pprof merges them), until stop closes.
func fetchProfile(url, path string, stop <-chan struct{}) error {
	for i := 1; ; i++ {
		select {
		case <-stop:
			return nil
		default:
		}
		resp, err := http.Get(strings.Replace(url, "seconds=600", "seconds=5", 1))
		if err != nil {
			return err
		}
		f, err := os.Create(fmt.Sprintf("%s.%d", path, i))
		if err == nil {
			_, err = io.Copy(f, resp.Body)
			f.Close()
		}
		resp.Body.Close()
		if err != nil {
			return err
		}
	}
}
