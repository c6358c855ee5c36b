package procs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed84792017/cellcast/cluster"
)

// Node is one broker process of a local cluster.
type Node struct {
	ID                     string
	HTTP, NATS, Route, Dir string
	Cmd                    *exec.Cmd
}

// WS is the node's WebSocket URL.
func (n *Node) WS() string { return "ws://" + n.HTTP + "/ws" }

// Cluster is a cluster of broker processes on loopback, each embedding a
// NATS server clustered with the others' (docs/cluster.md), or all on an
// external NATS cluster.
type Cluster struct {
	Bin     string
	Nodes   []*Node
	Args    []string // more broker flags for every node
	Log     string   // directory of the nodes' logs
	NATSURL string   // the external NATS cluster's URLs; empty: embedded
	Env     []string // more environment for every node (e.g. GOMAXPROCS=1)
}

// StartCluster starts n brokers under dir and waits until each is ready.
func StartCluster(bin, dir string, n int, args ...string) (*Cluster, error) {
	return start(&Cluster{Bin: bin, Args: args, Log: dir}, n)
}

// StartClusterOn starts n brokers under dir on the NATS cluster at
// natsURL (comma-separated URLs) and waits until each is ready.
func StartClusterOn(natsURL, bin, dir string, n int, args ...string) (*Cluster, error) {
	return start(&Cluster{Bin: bin, Args: args, Log: dir, NATSURL: natsURL}, n)
}

func start(c *Cluster, n int) (*Cluster, error) {
	if err := c.Start(n); err != nil {
		return nil, err
	}
	return c, nil
}

// Start starts n brokers, as c describes them, under c.Log and waits
// until each is ready; on an error none is left running.
func (c *Cluster) Start(n int) error {
	dir := c.Log
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var routes []string
	for i := range n {
		var addrs [3]string
		for k := range addrs {
			a, err := FreeAddr()
			if err != nil {
				return err
			}
			addrs[k] = a
		}
		c.Nodes = append(c.Nodes, &Node{ID: fmt.Sprintf("n%d", i+1), HTTP: addrs[0], NATS: addrs[1], Route: addrs[2],
			Dir: filepath.Join(dir, fmt.Sprintf("n%d", i+1))})
		routes = append(routes, addrs[2])
	}
	for i := range c.Nodes {
		if err := c.start(i, strings.Join(routes, ",")); err != nil {
			c.Stop()
			return err
		}
	}
	for _, nd := range c.Nodes {
		if err := WaitReady(nd.HTTP); err != nil {
			c.Stop()
			return fmt.Errorf("node %s: %w; the end of its log:\n%s", nd.ID, err, Tail(c.LogPath(nd), 5))
		}
	}
	return nil
}

func (c *Cluster) routes() string {
	var r []string
	for _, n := range c.Nodes {
		r = append(r, n.Route)
	}
	return strings.Join(r, ",")
}

// LogPath is where node nd's output goes.
func (c *Cluster) LogPath(nd *Node) string { return filepath.Join(c.Log, nd.ID+".log") }

func (c *Cluster) start(i int, routes string) error {
	nd := c.Nodes[i]
	log, err := os.OpenFile(c.LogPath(nd), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	args := []string{"--cluster-node", nd.ID, "--data", nd.Dir, "--http", nd.HTTP}
	if c.NATSURL != "" {
		args = append(args, "--nats-url", c.NATSURL)
	} else {
		args = append(args, "--nats-listen", nd.NATS, "--cluster-listen", nd.Route, "--cluster-routes", routes)
	}
	args = append(args, c.Args...)
	nd.Cmd = exec.Command(c.Bin, args...)
	if len(c.Env) > 0 {
		nd.Cmd.Env = append(os.Environ(), c.Env...)
	}
	nd.Cmd.Stdout, nd.Cmd.Stderr = log, log
	return nd.Cmd.Start()
}

// Kill ends node i with SIGKILL.
func (c *Cluster) Kill(i int) error {
	nd := c.Nodes[i]
	if err := nd.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	nd.Cmd.Wait()
	return nil
}

// Restart starts node i again on its data directory and addresses.
func (c *Cluster) Restart(i int) error {
	if err := c.start(i, c.routes()); err != nil {
		return err
	}
	return WaitReady(c.Nodes[i].HTTP)
}

// StopNode stops node i gracefully, as an operator's SIGTERM does: the
// broker drains its clients, hands its shards over and exits. It waits
// up to limit for the exit, then kills the node; an exit that needed the
// kill, or with a status other than 0, is an error (the node is stopped
// either way).
func (c *Cluster) StopNode(i int, limit time.Duration) error {
	nd := c.Nodes[i]
	if err := nd.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- nd.Cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("node %s after SIGTERM: %w; the end of its log:\n%s", nd.ID, err, Tail(c.LogPath(nd), 5))
		}
		return nil
	case <-time.After(limit):
		nd.Cmd.Process.Kill()
		<-done
		return fmt.Errorf("node %s: no exit %v after SIGTERM, killed; the end of its log:\n%s", nd.ID, limit, Tail(c.LogPath(nd), 5))
	}
}

// Remove removes stopped node i from the cluster for good, as an
// operator's cellcast remove-node does, through a running node. It asks
// again while the others still count i as running (its routes close) or
// elect a JetStream meta leader, up to limit.
func (c *Cluster) Remove(i int, limit time.Duration) error {
	var via *Node
	for j, nd := range c.Nodes {
		if j != i && nd.Running() {
			via = nd
			break
		}
	}
	if via == nil {
		return fmt.Errorf("removing %s: no node running", c.Nodes[i].ID)
	}
	url := "http://" + via.HTTP + "/admin/cluster/remove?node=" + c.Nodes[i].ID
	for end := time.Now().Add(limit); ; time.Sleep(250 * time.Millisecond) {
		resp, err := http.Post(url, "", nil)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK:
			return nil
		case (resp.StatusCode == http.StatusConflict && bytes.Contains(body, []byte("is running"))) ||
			resp.StatusCode == http.StatusServiceUnavailable:
			if time.Now().After(end) {
				return fmt.Errorf("removing %s through %s: still %s %s after %v", c.Nodes[i].ID, via.ID, resp.Status, bytes.TrimSpace(body), limit)
			}
		default:
			return fmt.Errorf("removing %s through %s: %s %s", c.Nodes[i].ID, via.ID, resp.Status, bytes.TrimSpace(body))
		}
	}
}

// LogsPlaced waits up to limit until every JetStream stream has a leader
// and want-1 current followers, all on running nodes' servers, as the
// running node's embedded server reports them.
func (c *Cluster) LogsPlaced(want int, limit time.Duration) error {
	running := map[string]bool{}
	var via *Node
	for _, nd := range c.Nodes {
		if nd.Running() {
			running[nd.ID] = true
			via = nd
		}
	}
	if via == nil {
		return errors.New("no node running")
	}
	nc, err := nats.Connect("nats://"+via.NATS, nats.Name("procs-logs-placed"))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	var bad []string
	for end := time.Now().Add(limit); ; time.Sleep(500 * time.Millisecond) {
		bad = bad[:0]
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		list := js.ListStreams(ctx)
		n := 0
		for si := range list.Info() {
			n++
			cl := si.Cluster
			ok := cl != nil && running[cl.Leader] && len(cl.Replicas) == want-1
			for k := 0; ok && k < len(cl.Replicas); k++ {
				p := cl.Replicas[k]
				ok = p.Current && !p.Offline && running[p.Name]
			}
			if !ok {
				bad = append(bad, si.Config.Name)
			}
		}
		err = list.Err()
		cancel()
		if err == nil && n > 0 && len(bad) == 0 {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("after %v, %d streams listed, these not on %d current replicas of running nodes: %v (%v)", limit, n, want, bad, err)
		}
	}
}

// Add starts one more node, n<k> after the k-1 there are, on fresh
// addresses and data directory, and waits until it is ready. Its
// --cluster-routes name every node's route address and its own, as an
// operator growing a cluster names them; the running nodes learn of it
// from NATS, and the shards rebalance onto it.
func (c *Cluster) Add() (*Node, error) {
	var addrs [3]string
	for k := range addrs {
		a, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		addrs[k] = a
	}
	id := fmt.Sprintf("n%d", len(c.Nodes)+1)
	nd := &Node{ID: id, HTTP: addrs[0], NATS: addrs[1], Route: addrs[2], Dir: filepath.Join(c.Log, id)}
	c.Nodes = append(c.Nodes, nd)
	if err := c.start(len(c.Nodes)-1, c.routes()); err != nil {
		c.Nodes = c.Nodes[:len(c.Nodes)-1]
		return nil, err
	}
	if err := WaitReady(nd.HTTP); err != nil {
		return nd, fmt.Errorf("node %s: %w; the end of its log:\n%s", nd.ID, err, Tail(c.LogPath(nd), 5))
	}
	return nd, nil
}

// Running reports whether the node's process is running (started, and
// not yet seen to exit).
func (n *Node) Running() bool {
	return n.Cmd != nil && n.Cmd.Process != nil && n.Cmd.ProcessState == nil
}

// Stop interrupts every node.
func (c *Cluster) Stop() {
	for _, nd := range c.Nodes {
		if nd.Running() {
			Stop(nd.Cmd)
		}
	}
}

// NATSCluster is nats-server processes on loopback, clustered, with
// JetStream: an external NATS cluster for brokers (docs/cluster.md).
type NATSCluster struct {
	Cmds []*exec.Cmd
	URLs []string
}

// StartNATSCluster starts n nats-servers of bin (see NATSServer) under
// dir and waits until each takes connections.
func StartNATSCluster(bin, dir string, n int) (*NATSCluster, error) {
	bin, err := NATSServer(bin)
	if err != nil {
		return nil, err
	}
	c := &NATSCluster{}
	var client, routes []string
	for range n {
		a, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		r, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		client, routes = append(client, a), append(routes, "nats://"+r)
	}
	for i := range n {
		host, port, _ := strings.Cut(client[i], ":")
		sd := filepath.Join(dir, fmt.Sprintf("nats%d", i+1))
		log, err := os.OpenFile(sd+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			c.Stop()
			return nil, err
		}
		cmd := exec.Command(bin, "-n", fmt.Sprintf("nats%d", i+1), "-a", host, "-p", port, "-js", "-sd", sd,
			"--cluster_name", "cellcast-nats", "--cluster", routes[i], "--routes", strings.Join(routes, ","))
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			c.Stop()
			return nil, err
		}
		c.Cmds, c.URLs = append(c.Cmds, cmd), append(c.URLs, "nats://"+client[i])
	}
	for _, u := range c.URLs {
		if err := WaitTCP(strings.TrimPrefix(u, "nats://")); err != nil {
			c.Stop()
			return nil, err
		}
	}
	return c, nil
}

// URL is every server's URL, comma-separated, as --nats-url takes them.
func (c *NATSCluster) URL() string { return strings.Join(c.URLs, ",") }

// Stop interrupts every server.
func (c *NATSCluster) Stop() {
	for _, cmd := range c.Cmds {
		if cmd.ProcessState == nil && cmd.Process != nil {
			Stop(cmd)
		}
	}
}

// ShardOwners reads, from each node's cellcast_cluster_shard_owned
// series, which node (by index) serves each of shards now; a shard no
// node reports is left out.
func ShardOwners(nodes []*Node, shards []string) map[string]int {
	owner := map[string]int{}
	for _, s := range shards {
		for i, nd := range nodes {
			if v, err := Metric(nd.HTTP, `cellcast_cluster_shard_owned{shard="`+s+`"}`); err == nil && v == 1 {
				owner[s] = i
			}
		}
	}
	return owner
}

// Settle waits until nodes serve the layout's shards between them,
// each holding no more than its fair share (cluster.Shards.Share), for
// three looks a second apart: a measurement or a kill then meets a
// settled cluster, not the rebalance that follows its start.
func Settle(nodes []*Node, layout cluster.Shards) error {
	steady := 0
	var counts []int
	shards, share := len(layout.All()), layout.Share(len(nodes))
	for deadline := time.Now().Add(time.Minute); steady < 3; time.Sleep(time.Second) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the shards never settled: %v owned", counts)
		}
		counts = counts[:0]
		total := 0
		for _, nd := range nodes {
			n, err := Metric(nd.HTTP, "cellcast_cluster_shards_owned")
			if err != nil {
				return err
			}
			counts = append(counts, int(n))
			total += int(n)
		}
		if total == shards && slices.Max(counts) <= share {
			steady++
		} else {
			steady = 0
		}
	}
	return nil
}
