package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/seed84792017/cellcast/bench/procs"
)

// brokerProc is the broker under test.
type brokerProc struct {
	cmd  *exec.Cmd
	addr string
	dir  string
}

func startBroker(s setup) (*brokerProc, error) {
	dir, err := os.MkdirTemp("", "geobench-")
	if err != nil {
		return nil, err
	}
	bin, err := procs.Broker(*brokerBin, dir)
	if err != nil {
		return nil, err
	}
	httpAddr, err := procs.FreeAddr()
	if err != nil {
		return nil, err
	}
	natsAddr, err := procs.FreeAddr()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "broker.log"))
	if err != nil {
		return nil, err
	}
	args := []string{"--data", filepath.Join(dir, "data"), "--http", httpAddr, "--nats-listen", natsAddr,
		"--cover", strconv.Itoa(s.cover), "--max-subscriptions", strconv.Itoa(*nSubs + 1000), "--rate", "1e9", "--burst", "1000000000",
		"--log-level", "warn", "--pprof"}
	if s.cellsOnly {
		args = append(args, "--bench-cells-only")
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	b := &brokerProc{cmd: cmd, addr: httpAddr, dir: dir}
	if err := procs.WaitReady(httpAddr); err != nil {
		b.stop()
		return nil, fmt.Errorf("%w; see %s", err, logf.Name())
	}
	return b, nil
}

func (b *brokerProc) stop() {
	procs.Stop(b.cmd)
	os.RemoveAll(b.dir)
}

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
