package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	cc "github.com/seed84792017/cellcast/client"
	"github.com/seed84792017/cellcast/cluster"
)

// startCluster starts n brokers, each embedding a NATS server clustered
// with the others with JetStream, and returns them once every shard is
// served.
func startCluster(t *testing.T, n int, opts ...func(*ClusterConfig)) []*Broker {
	t.Helper()
	brokers, err := tryStartCluster(t, n, opts...)
	if err != nil && strings.Contains(err.Error(), "address already in use") {
		// A route port found free was taken by another test process
		// before its node bound it: start again on other ports.
		t.Logf("starting the cluster again: %v", err)
		brokers, err = tryStartCluster(t, n, opts...)
	}
	if err != nil {
		t.Fatal(err)
	}
	return brokers
}

func tryStartCluster(t *testing.T, n int, opts ...func(*ClusterConfig)) ([]*Broker, error) {
	var ports []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, l.Addr().String())
		l.Close()
	}
	brokers := make([]*Broker, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() { // a clustered NATS server waits for its peers
			defer wg.Done()
			cfg := Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", NATSListen: "127.0.0.1:0",
				Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
				Cluster: ClusterConfig{Node: fmt.Sprintf("n%d", i), Listen: ports[i], Routes: ports, Replicas: n}}
			for _, o := range opts {
				o(&cfg.Cluster)
			}
			brokers[i], errs[i] = Start(cfg)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, b := range brokers {
			if b != nil {
				b.Shutdown(context.Background())
			}
		}
		return nil, err
	}
	for _, b := range brokers {
		t.Cleanup(func() {
			if b.ready.Load() {
				b.Shutdown(context.Background())
			}
		})
	}
	// Settled: every shard served, each group fairly, by the same nodes for a second.
	// Right after every shard has an owner the nodes may still hand some
	// on, and an operation meeting a handover can wait out a stream's
	// election on a loaded machine.
	layout := brokers[0].cfg.Cluster.shards()
	all := len(layout.All())
	deadline := time.Now().Add(60 * time.Second)
	var last string
	since := time.Now()
	for {
		var owned [][]string
		var view []string
		total := 0
		for _, b := range brokers {
			o := slices.Sorted(slices.Values(b.node.Owned()))
			owned = append(owned, o)
			view = append(view, strings.Join(o, ","))
			total += len(o)
		}
		now := strings.Join(view, " ")
		if now != last {
			last, since = now, time.Now()
		}
		if total == all && layout.Fair(owned) && time.Since(since) >= time.Second {
			return brokers, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("shards not settled: %v of %d owned", owned, all)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// crash stops a broker about as a kill does, as far as other processes
// can tell: its NATS server, listeners and connections go away at once,
// and none of its shards is handed over. (Its WebSocket clients get a
// close frame, which a kill would not send; the kill -9 test of the real
// binary covers that.)
func (b *Broker) crash() {
	b.ready.Store(false)
	b.nc.Close()
	b.ns.Shutdown()
	b.ln.Close()
	b.http.Close()
	// Hijacked WebSockets outlive http.Server.Close: cut them too, with
	// no time to drain.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b.gw.Close(ctx)
}

func wsURL(b *Broker) string { return "ws://" + b.HTTPAddr() + "/ws" }

type clusterSub struct {
	cell string
	on   int // the broker its client dialled first
	sub  *cc.Subscription
	mu   sync.Mutex
	got  map[string]int
}

func (s *clusterSub) read() {
	for n := range s.sub.C {
		s.mu.Lock()
		s.got[n.Publication.Desc]++
		s.mu.Unlock()
	}
}

// TestClusterOverWebSocket: three brokers, WebSocket clients on each,
// subscriptions and publications at cells above and below the shard
// depth; every acknowledged publication reaches every overlapping
// subscription exactly once, also after a broker is stopped abruptly
// under load and its clients reconnect to the others and resume.
// othersURLs are the WebSocket URLs of the brokers but brokers[i]: a
// client's fallbacks.
func othersURLs(brokers []*Broker, i int) []string {
	var out []string
	for j, o := range brokers {
		if j != i {
			out = append(out, wsURL(o))
		}
	}
	return out
}

func TestClusterOverWebSocket(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	brokers := startCluster(t, 3)
	ctx := context.Background()
	var clients []*cc.Client
	for i, b := range brokers {
		fallback := othersURLs(brokers, i)
		enc := cc.EncodingJSON
		if i == 1 {
			enc = cc.EncodingCBOR // notifications rendered afresh on the holding node
		}
		c, err := cc.Dial(ctx, wsURL(b), cc.Options{UID: fmt.Sprintf("user%d", i), Fallback: fallback, Encoding: enc,
			MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		clients = append(clients, c)
	}
	r := rand.New(rand.NewSource(3))
	cell := func() string {
		parts := make([]string, 1+r.Intn(4))
		for i := range parts {
			parts[i] = fmt.Sprint(1 + r.Intn(4))
		}
		return strings.Join(parts, ".")
	}
	var subs []*clusterSub
	var mu sync.Mutex
	pubs := map[string]string{} // desc -> cell, acknowledged
	unacked := map[string]bool{}
	publish := func(c *cc.Client, desc string) {
		at := cell()
		_, err := c.Publish(ctx, cc.PublishRequest{Location: cc.Cell(at), Expires: time.Hour, Desc: desc})
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			unacked[desc] = true // it may or may not have been stored
			return
		}
		pubs[desc] = at
	}
	for i := range 40 {
		s := &clusterSub{cell: cell(), got: map[string]int{}, on: i % 3}
		var err error
		s.sub, err = clients[i%3].Subscribe(ctx, cc.SubscribeRequest{Location: cc.Cell(s.cell), Past: time.Hour, Future: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range s.sub.Past {
			s.got[p.Desc]++
		}
		go s.read()
		subs = append(subs, s)
	}
	for i := range 120 {
		publish(clients[i%3], fmt.Sprintf("a%d", i))
	}
	// Node 2 stops while nodes 0 and 1 publish.
	var wg sync.WaitGroup
	for k := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				publish(clients[k], fmt.Sprintf("b%d-%d", k, i))
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	brokers[2].crash()
	wg.Wait()
	for i := range 60 {
		publish(clients[i%3], fmt.Sprintf("c%d", i)) // client 2 reconnects elsewhere
	}
	overlap := func(a, b string) bool {
		if len(a) > len(b) {
			a, b = b, a
		}
		return a == b || strings.HasPrefix(b, a+".")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var bad error
		mu.Lock()
		for _, s := range subs {
			s.mu.Lock()
			for desc, at := range pubs {
				if overlap(at, s.cell) && s.got[desc] != 1 {
					bad = errors.Join(bad, fmt.Errorf("subscription %s at %s on node %d got %s (at %s) %d times", s.sub.Sid, s.cell, s.on, desc, at, s.got[desc]))
				}
			}
			for desc, k := range s.got {
				at, ok := pubs[desc]
				if !ok && !unacked[desc] || ok && !overlap(at, s.cell) || k > 1 {
					bad = errors.Join(bad, fmt.Errorf("subscription %s at %s got %s (at %q) %d times", s.sub.Sid, s.cell, desc, at, k))
				}
			}
			s.mu.Unlock()
		}
		mu.Unlock()
		if bad == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(bad)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("%d acknowledged publications, %d refused while a node stopped", len(pubs), len(unacked))
	// The live nodes' /metrics name every shard's owner, once.
	owners := regexp.MustCompile(`(?m)^cellcast_cluster_shard_owned\{shard="([^"]+)"\} 1$`)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var names []string
		for _, b := range brokers[:2] {
			for _, m := range owners.FindAllStringSubmatch(metricsText(t, b), -1) {
				names = append(names, m[1])
			}
		}
		slices.Sort(names)
		want := cluster.Shards{Depth: 2}.All()
		slices.Sort(want)
		if slices.Equal(names, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("shards owned, by /metrics: %v, want each of %v once", names, want)
		}
	}
}

// TestSecondBrokerOnTheSameNATSRefusesToStart: two single brokers on one
// NATS server would split requests between two stores.
func TestSecondBrokerOnTheSameNATSRefusesToStart(t *testing.T) {
	url := "nats://" + externalNATS(t, "")
	waitNATS(t, url)
	start(t, Config{NATSURL: url})
	_, err := Start(Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", NATSURL: url,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if !errors.Is(err, ErrNotAlone) {
		t.Fatalf("a second broker on the same NATS server started: %v", err)
	}
	if !strings.Contains(err.Error(), "cluster") {
		t.Fatalf("the refusal does not say what to do: %v", err)
	}
}

// TestPingAnswersOnlyBrokers: a broker answers a ping only on a pong
// subject, never on a subject a requester names (a user's notifications).
func TestPingAnswersOnlyBrokers(t *testing.T) {
	url := "nats://" + externalNATS(t, "")
	waitNATS(t, url)
	start(t, Config{NATSURL: url})
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	forged, _ := nc.SubscribeSync("cellcast.notify.bob")
	pong, _ := nc.SubscribeSync(pongPrefix + "x")
	nc.PublishRequest(pingSubject, "cellcast.notify.bob", nil)
	nc.PublishRequest(pingSubject, pongPrefix+"x", nil)
	if _, err := pong.NextMsg(5 * time.Second); err != nil {
		t.Fatalf("no pong: %v", err)
	}
	if m, err := forged.NextMsg(200 * time.Millisecond); err == nil {
		t.Fatalf("a pong on a user's notification subject: %s", m.Data)
	}
}

// TestClusterTopics: topics over a cluster. Each node resolves topic
// names in the shared registry: subscriptions on two nodes, publications
// through the third, a new topic created through two nodes at once; every
// node agrees on the ids (a publication in a subtopic reaches the parent
// topic's subscriber, and both nodes' publications on the new topic reach
// its subscriber), and each notification names its topic, which the
// rendering node may first have learnt from the registry.
// TestClusterTopics subscribes and publishes by topic across three
// nodes, with topics placed by their top-level topic, by their first two
// levels over nine topic shards (then "sports" and "news" live apart from
// their subtopics), and with subscriptions placed by user.
func TestClusterTopics(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	for _, l := range []struct {
		depth, groups int
		spread        bool
	}{{1, 4, false}, {2, 9, false}, {1, 4, true}} {
		t.Run(fmt.Sprintf("topic depth %d over %d, spread by user %v", l.depth, l.groups, l.spread), func(t *testing.T) {
			testClusterTopics(t, startCluster(t, 3, func(c *ClusterConfig) {
				c.TopicShardDepth, c.TopicShardGroups, c.TopicSpread = l.depth, l.groups, l.spread
			}))
		})
	}
}

func testClusterTopics(t *testing.T, brokers []*Broker) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dial := func(i int) *cc.Client {
		c, err := cc.Dial(ctx, wsURL(brokers[i]), cc.Options{UID: fmt.Sprintf("u%d", i), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	c0, c1, c2 := dial(0), dial(1), dial(2)
	sports, err := c0.Subscribe(ctx, cc.SubscribeRequest{Location: cc.Topic("sports"), Future: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	soccer, err := c1.Subscribe(ctx, cc.SubscribeRequest{Location: cc.Topic("sports/soccer"), Future: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Publish(ctx, cc.PublishRequest{Location: cc.Topic("sports/soccer"), Expires: time.Minute, Desc: "goal"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Publish(ctx, cc.PublishRequest{Location: cc.Topic("sports/tennis"), Expires: time.Minute, Desc: "ace"}); err != nil {
		t.Fatal(err)
	}
	// A topic only one node has seen, so that a registry of each node's
	// own would number the next one differently on the two below.
	if _, err := c0.Publish(ctx, cc.PublishRequest{Location: cc.Topic("weather"), Expires: time.Minute, Desc: "rain"}); err != nil {
		t.Fatal(err)
	}
	// A topic nobody has used yet, created through two nodes at once.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	acked := make([]string, 2) // for the failure's message
	for i, c := range []*cc.Client{c0, c2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var res *cc.Published
			res, errs[i] = c.Publish(ctx, cc.PublishRequest{Location: cc.Topic("news/local"), Expires: time.Minute, Desc: fmt.Sprintf("news %d", i)})
			if res != nil {
				acked[i] = fmt.Sprintf("%s at %s, matched %d", res.Pid, res.Cell, res.Matched)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	news, err := c1.Subscribe(ctx, cc.SubscribeRequest{Location: cc.Topic("news"), Past: time.Minute, Future: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range news.Past {
		if p.Topic != "news/local" {
			t.Fatalf("a past result names topic %q", p.Topic)
		}
		got = append(got, p.Desc)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"news 0", "news 1"}) {
		var owned []string
		for _, b := range brokers {
			owned = append(owned, strings.Join(slices.Sorted(slices.Values(b.node.Owned())), ","))
		}
		t.Fatalf("past results of news (%s): %v; the publications: %v; owned: %v", news.Sid, got, acked, owned)
	}
	want := map[*cc.Subscription][]string{sports: {"goal sports/soccer", "ace sports/tennis"}, soccer: {"goal sports/soccer"}}
	for s, w := range want {
		var seen []string
		for len(seen) < len(w) {
			select {
			case n := <-s.C:
				seen = append(seen, n.Publication.Desc+" "+n.Publication.Topic)
			case <-ctx.Done():
				t.Fatalf("%s got %v, want %v", s.Sid, seen, w)
			}
		}
		slices.Sort(seen)
		slices.Sort(w)
		if !slices.Equal(seen, w) {
			t.Fatalf("%s got %v, want %v", s.Sid, seen, w)
		}
	}
	select {
	case n := <-soccer.C:
		t.Fatalf("soccer got %s (%s)", n.Publication.Desc, n.Publication.Topic)
	case <-time.After(300 * time.Millisecond):
	}
	// Any node finds a subscription by its sid (and user) to cancel it.
	for _, s := range []*cc.Subscription{sports, soccer, news} {
		if err := c2.Unsubscribe(ctx, s.Sid); !errors.Is(err, cc.ErrForbidden) && !errors.Is(err, cc.ErrNotFound) {
			t.Fatalf("u2 cancelling %s: %v", s.Sid, err)
		}
	}
	for _, s := range []*cc.Subscription{sports, soccer, news} {
		if err := s.Unsubscribe(ctx); err != nil {
			t.Fatalf("cancelling %s: %v", s.Sid, err)
		}
	}
}
