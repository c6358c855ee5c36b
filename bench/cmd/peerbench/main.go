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
// profile and the load generator's. Every round's load generator is a
// process of its own (this command run again with -one), so no round
// inherits another's heap.
//
// The workload is bench/workload's s2 space, as cmd/loadgen's: S2 cells
// over New York from -min-level (10, about 10 km) to -level (16, about
// 150 m), which replace the quad tree's -depth. On NATS a cell is a
// subject per level (bench/natspeer), so a subscription at level L listens
// on L+2 subjects.
package main

import (
	"context"
	"encoding/json"
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
	one        = flag.String("one", "", "internal: run one system's round (nats, or a durability mode) and print its row as JSON")
	round      = flag.Int("round", 0, "internal: the round -one runs")
	dataDir    = flag.String("data", "", "internal: the broker's data directory for -one")
	profile    = flag.String("cpuprofile", "", "write the broker's CPU profile of each run to this path prefix (<prefix>-<round>-<mode>.pprof.<n>), and the load generator's to <prefix>-<round>-<mode>-client.pprof")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "peerbench:", err)
		os.Exit(1)
	}
}

type row struct {
	System      string
	OpsPerSec   float64
	NotesPerSec float64
	// DeliveredPerSec adds past results to notifications: in a closed
	// loop the split between the two follows the timing.
	DeliveredPerSec float64
	P50, P99        float64
	Complete, Notes string
	// CPU is the server process's CPU seconds (user and system) over the
	// run; USPerNote that over the notifications delivered, in µs.
	CPU, USPerNote float64
	// ClientCPU is the load generator's CPU seconds over the run: on a
	// small machine it competes with the server.
	ClientCPU float64
}

func run() error {
	if *ahead < 0 {
		*ahead = *window * (*conns + *pubConns)
	}
	if *level < 1 {
		return fmt.Errorf("-level %d: use 1 to 30", *level)
	}
	if *one != "" {
		return runOne()
	}
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
		nr, err := runChild("nats", r, nats, broker, dir)
		if err != nil {
			return err
		}
		rows = append(rows, nr)
		for _, m := range modes {
			fmt.Fprintf(os.Stderr, "round %d: cellcast --durability %s\n", r+1, m)
			cr, err := runChild(m, r, nats, broker, dir)
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
		*users, *nOps, *ratio, *minLevel, *level, *window, *conns, *pubConns, bound, frames)
	fmt.Println("| system | ops/s | notifications/s | vs NATS core (same round) | notifications + past results /s | p50 ms | p99 ms | server CPU s | CPU µs per notification | vs NATS core | client CPU s | complete | notes |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
	var base, baseCPU float64
	for _, r := range rows {
		if r.System == "NATS core" {
			base, baseCPU = r.NotesPerSec, r.USPerNote
		}
		fmt.Printf("| %s | %.0f | %.0f | %.2f× | %.0f | %.1f | %.1f | %.1f | %.2f | %.2f× | %.1f | %s | %s |\n", r.System, r.OpsPerSec, r.NotesPerSec, r.NotesPerSec/base,
			r.DeliveredPerSec, r.P50, r.P99, r.CPU, r.USPerNote, r.USPerNote/baseCPU, r.ClientCPU, r.Complete, r.Notes)
	}
	return nil
}

// runChild runs one system's round ("nats", or a durability mode) in a
// fresh process of this command, so that no round's load generator
// inherits the last one's heap: NATS core's client leaves a gigabyte
// behind (a goroutine per subscription), which the kernel's memory
// monitor keeps tending, and the garbage collector scanning, through
// the next round.
func runChild(system string, round int, nats, broker, dir string) (row, error) {
	self, err := os.Executable()
	if err != nil {
		return row{}, err
	}
	args := append(os.Args[1:len(os.Args):len(os.Args)], "-one", system, "-round", strconv.Itoa(round+1),
		"-nats-server", nats, "-broker", broker, "-data", filepath.Join(dir, fmt.Sprint("data-", round, "-", system)))
	cmd := exec.Command(self, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return row{}, fmt.Errorf("round %d of %s: %w", round+1, system, err)
	}
	var r row
	if err := json.Unmarshal(out, &r); err != nil {
		return row{}, fmt.Errorf("round %d of %s: its row: %w", round+1, system, err)
	}
	return r, nil
}

// runOne is a child's work: it runs -one and prints its row as JSON.
func runOne() error {
	g, err := workload.New(workload.Config{Seed: *seed, Ops: *nOps, Users: *users, SubsPerPub: *ratio, Space: workload.S2,
		MinLevel: *minLevel, Level: *level})
	if err != nil {
		return err
	}
	ops := g.All()
	var r row
	if *one == "nats" {
		r, err = runNATS(*natsBin, ops)
	} else {
		prof := ""
		if *profile != "" {
			prof = fmt.Sprintf("%s-%d-%s.pprof", *profile, *round, *one)
		}
		r, err = runBroker(*brokerBin, *dataDir, *one, ops, prof)
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(r)
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
	return row{System: "NATS core", OpsPerSec: rep.OpsPerSec, NotesPerSec: rep.NotesPerSec, DeliveredPerSec: rep.NotesPerSec, P50: rep.LatencyMs[0], P99: rep.LatencyMs[1],
		CPU: cpu1 - cpu0, USPerNote: perNote(cpu1-cpu0, rep.Notifications), ClientCPU: selfCPU() - self0,
		Complete: "not checked (no past results, nothing stored)", Notes: fmt.Sprintf("%d dropped as slow consumers", rep.Dropped)}, nil
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
		stop, err := procs.ProfileCPU(strings.TrimSuffix(prof, ".pprof") + "-client.pprof")
		if err != nil {
			return row{}, err
		}
		defer stop()
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
	return row{System: "cellcast, " + mode, OpsPerSec: rep.OpsPerSec, NotesPerSec: rep.NotesPerSec,
		DeliveredPerSec: float64(rep.Notifications+rep.PastResults) / rep.Seconds, P50: rep.Latency.P50, P99: rep.Latency.P99,
		CPU: cpu1 - cpu0, USPerNote: perNote(cpu1-cpu0, int64(rep.Notifications)), ClientCPU: selfCPU() - self0,
		Complete: complete, Notes: notes}, nil
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
