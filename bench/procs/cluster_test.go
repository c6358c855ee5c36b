package procs

import (
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeBroker makes this test binary stand in for a broker when started
// by Cluster.Start: it writes its node id and GOMAXPROCS into its data
// directory and reports ready.
const fakeBroker = "PROCS_TEST_FAKE_BROKER"

func TestMain(m *testing.M) {
	if os.Getenv(fakeBroker) == "1" {
		fs := flag.NewFlagSet("broker", flag.ExitOnError)
		id := fs.String("cluster-node", "", "")
		data := fs.String("data", "", "")
		addr := fs.String("http", "", "")
		fs.String("nats-listen", "", "")
		fs.String("cluster-listen", "", "")
		fs.String("cluster-routes", "", "")
		fs.String("rate", "", "")
		fs.Parse(os.Args[1:])
		os.MkdirAll(*data, 0o755)
		os.WriteFile(filepath.Join(*data, "seen"), []byte(*id+" "+os.Getenv("GOMAXPROCS")), 0o644)
		http.HandleFunc("/readyz", func(http.ResponseWriter, *http.Request) {})
		http.ListenAndServe(*addr, nil)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// Every node starts with the cluster's environment added to this
// process's, and its own flags.
func TestClusterEnv(t *testing.T) {
	t.Setenv(fakeBroker, "1")
	c := &Cluster{Bin: os.Args[0], Log: t.TempDir(), Args: []string{"--rate", "7"}, Env: []string{"GOMAXPROCS=1"}}
	if err := c.Start(3); err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	for _, nd := range c.Nodes {
		b, err := os.ReadFile(filepath.Join(nd.Dir, "seen"))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.TrimSpace(string(b)), nd.ID+" 1"; got != want {
			t.Errorf("node %s saw %q, want %q", nd.ID, got, want)
		}
	}
}

// Tail keeps the last lines of a log, all of a short one, and nothing of
// a missing one.
func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	os.WriteFile(path, []byte("a\nb\nc\nd\n"), 0o644)
	for n, want := range map[int]string{2: "c\nd", 4: "a\nb\nc\nd", 9: "a\nb\nc\nd"} {
		if got := Tail(path, n); got != want {
			t.Errorf("Tail(%d) = %q, want %q", n, got, want)
		}
	}
	if got := Tail(path+".none", 3); got != "" {
		t.Errorf("a missing file's tail: %q", got)
	}
}
