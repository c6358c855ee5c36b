package procs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Single is one broker process on loopback, its data and log in Dir.
type Single struct {
	Cmd  *exec.Cmd
	HTTP string // host:port of its HTTP listener
	Dir  string
}

// StartBroker starts bin (built into a new temporary directory named
// after name when empty) with its data, HTTP and NATS listeners in that
// directory and on free loopback ports, then args, env added to its
// environment, and waits until it is ready. Its log is Dir/broker.log.
func StartBroker(bin, name string, env []string, args ...string) (*Single, error) {
	dir, err := os.MkdirTemp("", name+"-")
	if err != nil {
		return nil, err
	}
	if bin, err = Broker(bin, dir); err != nil {
		return nil, err
	}
	httpAddr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	natsAddr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "broker.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append([]string{"--data", filepath.Join(dir, "data"), "--http", httpAddr, "--nats-listen", natsAddr}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Single{Cmd: cmd, HTTP: httpAddr, Dir: dir}
	if err := WaitReady(httpAddr); err != nil {
		s.Stop(true)
		return nil, fmt.Errorf("%w; see %s", err, logf.Name())
	}
	return s, nil
}

// Stop stops the broker and removes its directory, unless keep.
func (s *Single) Stop(keep bool) {
	Stop(s.Cmd)
	if keep {
		fmt.Fprintln(os.Stderr, "kept", s.Dir)
		return
	}
	os.RemoveAll(s.Dir)
}
