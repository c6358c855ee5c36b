package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/delivery"
	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/subscriptions"
)

// quiet drops the logs of nodes whose NATS server a test stopped.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// natsCluster starts n clustered nats-servers with JetStream. The route
// ports are found free and then let go, so another test process may take
// one first: a cluster whose servers do not come up is started again on
// other ports.
func natsCluster(t *testing.T, n int) []*server.Server {
	t.Helper()
	for try := 1; ; try++ {
		out, err := tryNATSCluster(t, n)
		if err == nil {
			return out
		}
		for _, s := range out {
			s.Shutdown()
		}
		if try == 3 {
			t.Fatal(err)
		}
		t.Logf("starting the NATS cluster again: %v", err)
	}
}

func tryNATSCluster(t *testing.T, n int) ([]*server.Server, error) {
	var out []*server.Server
	ports := freePorts(t, n)
	var routes []*url.URL
	for _, p := range ports {
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	for i := range n {
		o := &server.Options{ServerName: fmt.Sprintf("s%d", i), Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
			JetStream: true, StoreDir: t.TempDir(), MaxPayload: 8 << 20,
			Cluster: server.ClusterOpts{Name: "cellcast-test", Host: "127.0.0.1", Port: ports[i]}, Routes: routes}
		s, err := server.NewServer(o)
		if err != nil {
			return out, err
		}
		go s.Start()
		t.Cleanup(s.Shutdown)
		out = append(out, s)
	}
	for _, s := range out {
		if !s.ReadyForConnections(30 * time.Second) {
			return out, errors.New("nats server did not start (a route port taken?)")
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, s := range out {
		for !s.JetStreamIsCurrent() || s.JetStreamIsLeader() == false && !anyLeader(out) {
			if time.Now().After(deadline) {
				return out, errors.New("JetStream did not form a cluster")
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return out, nil
}

func freePorts(t *testing.T, n int) []int {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

func anyLeader(ss []*server.Server) bool {
	for _, s := range ss {
		if s.Running() && s.JetStreamIsLeader() {
			return true
		}
	}
	return false
}

// sink collects what reaches one test subscriber.
type sink struct {
	mu    sync.Mutex
	got   map[string][]string // sid -> publication descriptions, in order
	last  map[string]int64
	ended map[string]delivery.EndReason
	// broken counts notifications whose Prev is not the last one taken:
	// the gap a subscriber would see and have to resume from.
	broken map[string]int
}

func newSink() *sink {
	return &sink{got: map[string][]string{}, last: map[string]int64{}, ended: map[string]delivery.EndReason{}, broken: map[string]int{}}
}

func (k *sink) Notify(n *delivery.Notification) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if n.Prev != k.last[n.Sid] {
		k.broken[n.Sid]++
	}
	k.got[n.Sid] = append(k.got[n.Sid], string(n.Body))
	k.last[n.Sid] = n.Seq
	return true
}
func (k *sink) Ended(e delivery.End) {
	k.mu.Lock()
	k.ended[e.Sid] = e.Why
	k.mu.Unlock()
}

type testNode struct {
	*Node
	nc *nats.Conn
}

func startNodes(t *testing.T, servers []*server.Server, depth int) []*testNode {
	t.Helper()
	var out []*testNode
	for i, s := range servers {
		nc, err := nats.Connect(s.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		cfg := Config{ID: fmt.Sprintf("n%d", i), NC: nc, Dir: t.TempDir(), Shards: Shards{Depth: depth},
			Replicas: len(servers), Log: quiet, Encode: func(p *subscriptions.Publication) []byte { return []byte(p.Desc) }}
		// As the broker does: JetStream may still be electing its first
		// leaders, and the lease bucket cannot be made before.
		n, err := Start(context.Background(), cfg)
		for deadline := time.Now().Add(30 * time.Second); err != nil && time.Now().Before(deadline); {
			time.Sleep(200 * time.Millisecond)
			n, err = Start(context.Background(), cfg)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		out = append(out, &testNode{Node: n, nc: nc})
	}
	waitOwned(t, out, Shards{Depth: depth}.All())
	return out
}

// waitOwned waits until the live nodes together serve every shard.
func waitOwned(t *testing.T, nodes []*testNode, all []string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var owned []string
		for _, n := range nodes {
			owned = append(owned, n.Owned()...)
		}
		sort.Strings(owned)
		if slices.Equal(owned, sorted(all)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("shards served: %v, want %v", owned, all)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

// randomCell picks a geo cell of depth 1 to 4: shallower and deeper than
// the shard depth.
func randomCell(r *rand.Rand) subscriptions.Cell {
	id := dewey.ID{}
	for range 1 + r.Intn(4) {
		id = append(id, uint32(1+r.Intn(4)))
	}
	return subscriptions.Cell{NS: subscriptions.NSCell, ID: id}
}

// overlaps is the oracle's own ancestor-or-self test.
func overlaps(a, b subscriptions.Cell) bool {
	x, y := a.ID.String(), b.ID.String()
	if len(x) > len(y) {
		x, y = y, x
	}
	return x == "" || x == y || strings.HasPrefix(y, x+".")
}

type testSub struct {
	sid      string
	uid      string
	cell     subscriptions.Cell
	node     int
	sink     *sink
	past     []string
	selfJoin bool
}

// TestClusterMatchesLikeOneNode runs subscribes and publishes on three
// nodes against an oracle, then stops a node abruptly: its shards move,
// its subscribers resume on the other nodes, and every publication
// reaches every overlapping subscription exactly once.
func TestClusterMatchesLikeOneNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three clustered nats-servers")
	}
	servers := natsCluster(t, 3)
	nodes := startNodes(t, servers, 2)
	r := rand.New(rand.NewSource(16))
	ctx := context.Background()
	var subs []*testSub
	var pubs []subscriptions.Cell
	sinks := []*sink{newSink(), newSink(), newSink()}
	publish := func(alive []int) {
		c := randomCell(r)
		i := alive[r.Intn(len(alive))]
		desc := fmt.Sprintf("p%d", len(pubs))
		err := nodes[i].Publish(ctx, &subscriptions.PublishRequest{Uid: "pub", Cell: c, Expires: time.Hour, Desc: desc},
			func(*subscriptions.PublishResult) {})
		if err != nil {
			t.Fatalf("publish at node %d on %v: %v", i, c, err)
		}
		pubs = append(pubs, c)
	}
	subscribe := func(alive []int) {
		c := randomCell(r)
		i := alive[r.Intn(len(alive))]
		s := &testSub{uid: fmt.Sprintf("u%d", len(subs)), cell: c, node: i, sink: sinks[i]}
		err := nodes[i].Subscribe(ctx, &subscriptions.SubscribeRequest{Uid: s.uid, Cell: c, Past: time.Hour, Future: time.Hour},
			sinks[i], func(res *subscriptions.SubscribeResult, sid string) {
				s.sid = sid
				for _, p := range res.Past { // from this node's shard
					s.past = append(s.past, p.Desc)
				}
				for _, b := range res.Rendered { // from another's, rendered by Encode
					s.past = append(s.past, string(b))
				}
			})
		if err != nil {
			t.Fatalf("subscribe at node %d on %v: %v", i, c, err)
		}
		subs = append(subs, s)
	}
	all := []int{0, 1, 2}
	for range 300 {
		if r.Intn(3) == 0 {
			subscribe(all)
		} else {
			publish(all)
		}
	}
	check := func(stage string, resumed map[string]bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			bad := ""
			for _, s := range subs {
				want := map[string]int{}
				for j, c := range pubs {
					if overlaps(c, s.cell) {
						want[fmt.Sprintf("p%d", j)] = 1
					}
				}
				s.sink.mu.Lock()
				got := map[string]int{}
				for _, d := range append(slices.Clone(s.past), s.sink.got[s.sid]...) {
					got[d]++
				}
				s.sink.mu.Unlock()
				for d, k := range got {
					if want[d] == 0 {
						bad = fmt.Sprintf("%s: sub %s at %v got %s, which does not overlap it", stage, s.sid, s.cell, d)
					} else if k > 1 && !resumed[s.sid] {
						bad = fmt.Sprintf("%s: sub %s at %v got %s %d times", stage, s.sid, s.cell, d, k)
					}
				}
				for d := range want {
					if got[d] == 0 {
						bad = fmt.Sprintf("%s: sub %s at %v (node %d) missed %s", stage, s.sid, s.cell, s.node, d)
					}
				}
			}
			if bad == "" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal(bad)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	check("three nodes", nil)

	// Node 2 stops abruptly: its NATS server and connection go away
	// without handing anything over.
	dead := 2
	nodes[dead].nc.Close()
	servers[dead].Shutdown()
	alive := []int{0, 1}
	resumed := map[string]bool{}
	start := time.Now()
	deadShards := nodes[dead].Owned()
	for _, sh := range deadShards {
		if IsTopic(sh) {
			continue
		}
		c := cellIn(nodes[0].cfg.Shards, sh)
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := nodes[0].Publish(pctx, &subscriptions.PublishRequest{Uid: "pub", Cell: c, Expires: time.Hour, Desc: fmt.Sprintf("p%d", len(pubs))},
			func(*subscriptions.PublishResult) {})
		cancel()
		if err != nil {
			t.Fatalf("publish into shard %s after its node stopped: %v", sh, err)
		}
		pubs = append(pubs, c)
	}
	t.Logf("the stopped node's shards %v served again %v after the stop", deadShards, time.Since(start))
	for _, s := range subs {
		if s.node != dead {
			continue
		}
		s.sink.mu.Lock()
		last := s.sink.last[s.sid]
		s.sink.mu.Unlock()
		to := alive[r.Intn(2)]
		s.node, s.sink = to, sinks[to]
		// The earlier notifications are in the dead node's sink: carry
		// them over so the check sees the whole history.
		sinks[dead].mu.Lock()
		prior := slices.Clone(sinks[dead].got[s.sid])
		sinks[dead].mu.Unlock()
		s.past = append(s.past, prior...)
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := nodes[to].Resume(rctx, s.sid, last, s.uid, sinks[to], func(*subscriptions.ReplayResult) {})
		cancel()
		if err != nil {
			t.Fatalf("resume %s at node %d: %v", s.sid, to, err)
		}
		resumed[s.sid] = true
	}
	t.Logf("subscribers of the stopped node resumed %v after the stop", time.Since(start))
	for range 150 {
		if r.Intn(3) == 0 {
			subscribe(alive)
		} else {
			publish(alive)
		}
	}
	waitOwned(t, nodes[:2], Shards{Depth: 2}.All())
	check("after a node stopped", resumed)

	// A node that would split shards unlike the cluster is refused.
	for _, m := range []Shards{{Depth: 3}, {Depth: 2, TopicDepth: 2}, {Depth: 2, TopicGroups: 8}} {
		_, err := Start(ctx, Config{ID: "n9", NC: nodes[0].nc, Dir: t.TempDir(), Shards: m, Replicas: 3, Log: quiet, Encode: func(p *subscriptions.Publication) []byte { return []byte(p.Desc) }})
		if !errors.Is(err, ErrLayout) {
			t.Fatalf("a node of layout %s joined a cluster of %s: %v", m, Shards{Depth: 2}, err)
		}
	}
}

// cellIn is a cell whose subscriptions live in shard: for a geo shard a
// cell at the shard depth hashed to it, for g0 one above the depth.
func cellIn(m Shards, shard string) subscriptions.Cell {
	if shard == Overflow {
		return subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1}}
	}
	id := make(dewey.ID, m.depth())
	for i := range id {
		id[i] = 1
	}
	for n := uint32(1); ; n++ { // any Dewey id is a cell: hashes enough to hit every shard
		id[len(id)-1] = n
		c := subscriptions.Cell{NS: subscriptions.NSCell, ID: slices.Clone(id)}
		if m.Home([]subscriptions.Cell{c}) == shard {
			return c
		}
	}
}
