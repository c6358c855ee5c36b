package procs

import (
	"flag"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
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
		routes := fs.String("cluster-routes", "", "")
		fs.String("rate", "", "")
		fs.Parse(os.Args[1:])
		os.MkdirAll(*data, 0o755)
		os.WriteFile(filepath.Join(*data, "seen"), []byte(*id+" "+os.Getenv("GOMAXPROCS")), 0o644)
		os.WriteFile(filepath.Join(*data, "routes"), []byte(*routes), 0o644)
		http.HandleFunc("/readyz", func(http.ResponseWriter, *http.Request) {})
		// SIGTERM is a clean stop, as the broker's.
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		go func() { <-term; os.Exit(0) }()
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

// A node stopped with SIGTERM starts again on its addresses and data,
// and a node added names every node's route address, its own among them.
func TestClusterStopNodeAndAdd(t *testing.T) {
	t.Setenv(fakeBroker, "1")
	c := &Cluster{Bin: os.Args[0], Log: t.TempDir()}
	if err := c.Start(2); err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if err := c.StopNode(0, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if c.Nodes[0].Running() || !c.Nodes[1].Running() {
		t.Fatalf("running after stopping n1: %v, %v", c.Nodes[0].Running(), c.Nodes[1].Running())
	}
	if err := c.Restart(0); err != nil {
		t.Fatal(err)
	}
	nd, err := c.Add()
	if err != nil {
		t.Fatal(err)
	}
	if nd.ID != "n3" || len(c.Nodes) != 3 || !nd.Running() {
		t.Fatalf("added %s, %d nodes", nd.ID, len(c.Nodes))
	}
	b, err := os.ReadFile(filepath.Join(nd.Dir, "routes"))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(string(b), ",")
	for _, n := range c.Nodes {
		if !slices.Contains(got, n.Route) {
			t.Errorf("n3's routes %q lack %s's %s", b, n.ID, n.Route)
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
