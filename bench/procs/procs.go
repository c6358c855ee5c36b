package procs

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Broker returns bin, or when it is empty builds ./cmd/broker into dir
// (run from the repository root).
func Broker(bin, dir string) (string, error) {
	if bin != "" {
		return bin, nil
	}
	bin = filepath.Join(dir, "broker")
	build := exec.Command("go", "build", "-o", bin, "./cmd/broker")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("building the broker (run from the repository root): %w", err)
	}
	return bin, nil
}

// NATSServer returns bin, or when it is empty .tools/nats-server (which
// `make tools` installs) or the one on $PATH.
func NATSServer(bin string) (string, error) {
	if bin != "" {
		return bin, nil
	}
	if p, err := filepath.Abs(".tools/nats-server"); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("nats-server")
	if err != nil {
		return "", errors.New("no nats-server: run `make tools` (installs .tools/nats-server) or name one")
	}
	return p, nil
}

// FreeAddr returns a loopback address whose port was free a moment ago.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// WaitTCP waits until something listens on addr.
func WaitTCP(addr string) error {
	for range 200 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("nothing listens on %s", addr)
}

// Tail is the last n lines of the file at path, for an error that a
// process's log explains; empty when it cannot be read.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// WaitReady waits until the broker on httpAddr answers /readyz with 200.
func WaitReady(httpAddr string) error {
	for range 600 {
		if resp, err := http.Get("http://" + httpAddr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("the broker on %s did not become ready", httpAddr)
}

// Stop interrupts cmd and kills it if it has not exited within 10 s.
func Stop(cmd *exec.Cmd) {
	cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// Metric reads one unlabelled series from the broker's /metrics on httpAddr.
func Metric(httpAddr, name string) (float64, error) {
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no series %s", httpAddr, name)
}

// WorkDir makes a temporary directory for a run's data and logs. done
// removes it, unless keep: then its path is printed for a look later.
func WorkDir(name string, keep bool) (dir string, done func(), err error) {
	if dir, err = os.MkdirTemp("", name); err != nil {
		return "", nil, err
	}
	if keep {
		fmt.Println("data and logs in", dir)
		return dir, func() {}, nil
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// CPUSeconds is the user and system time of process pid so far.
func CPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 > len(b) {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / 100, nil // USER_HZ
}
