package broker

import (
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"
)

// warnOrError is a WARN or ERROR line of the text log.
var warnOrError = regexp.MustCompile(`(?m)^.*level=(WARN|ERROR).*$`)

// TestCleanStopLogsNoWarning: the real binary, with auth so that nothing
// at start deserves a warning either, stops on SIGTERM with exit code 0
// and no WARN or ERROR line (it logged "nats disconnected" err=<nil>).
func TestCleanStopLogsNoWarning(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("a-secret-token-of-some-length alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBroker(t, buildBroker(t), filepath.Join(dir, "data"), "--log-level", "info", "--auth-tokens", tokens)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit 30 s after SIGTERM:\n%s", p.out)
	}
	log := p.out.String()
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d:\n%s", code, log)
	}
	if !regexp.MustCompile(`msg="stopped cleanly"`).MatchString(log) {
		t.Fatalf("no clean stop logged:\n%s", log)
	}
	if w := warnOrError.FindAllString(log, -1); len(w) > 0 {
		t.Fatalf("a clean stop logged %q:\n%s", w, log)
	}
}
