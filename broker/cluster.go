package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/seed84792017/cellcast/catalog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/cluster"
	"github.com/seed84792017/cellcast/gateway"
	"github.com/seed84792017/cellcast/lsm"
)

// ClusterConfig makes the broker a node of a cluster (docs/cluster.md).
// With Node empty the broker runs alone, as it always has.
type ClusterConfig struct {
	Node string // this node's id, unique in the cluster
	// Listen is the embedded NATS server's cluster (route) address, and
	// Routes the other nodes' ("host:port" or "nats://host:port").
	// Unused with an external NATS cluster (Config.NATSURL).
	Listen string
	Routes []string
	Name   string // the NATS cluster's name; default "cellcast"
	// Security authenticates and encrypts the routes; required when
	// Listen is beyond loopback.
	Security RouteSecurity
	// ShardDepth and ShardGroups: the subtrees of the world grid at
	// ShardDepth components are hashed onto ShardGroups shards, beside an
	// overflow shard (cluster.Shards); defaults 11 (S2 level 10) and 16.
	ShardDepth  int
	ShardGroups int
	// TopicShardDepth is how many components of a topic path place it in
	// one of TopicShardGroups topic shards (cluster.Shards); defaults 1,
	// by top-level topic, and 4.
	TopicShardDepth  int
	TopicShardGroups int
	// TopicSpread places topic subscriptions by user and stores every
	// topic publication in every topic shard (cluster.Shards.TopicSpread).
	TopicSpread bool
	// Replicas of each shard's log; default 3, the size of the smallest
	// cluster that survives the loss of a node.
	Replicas int
	LeaseTTL time.Duration // default 2 s
	// ElectionTimeout is how long the embedded NATS server's raft
	// followers wait for a leader before electing another: between it and
	// twice it (default DefaultElectionTimeout, at least
	// MinElectionTimeout). It bounds the failover of the shards whose log
	// the dead node's server led. It is process-wide, and unused with an
	// external NATS cluster, whose servers keep their own (4-9 s).
	ElectionTimeout time.Duration
}

// clustered reports whether the broker is a cluster node.
func (c *Config) clustered() bool { return c.Cluster.Node != "" }

// clusterOptions adds the cluster listener, the routes and JetStream to
// the embedded NATS server's options.
func (b *Broker) clusterOptions(o *server.Options) error {
	cc := b.cfg.Cluster
	host, port, err := splitHostPort(cc.Listen)
	if err != nil {
		return fmt.Errorf("--cluster-listen %q: %w", cc.Listen, err)
	}
	name := cc.Name
	if name == "" {
		name = "cellcast"
	}
	et := cc.ElectionTimeout
	if et == 0 {
		et = DefaultElectionTimeout
	}
	if err := setRaftTiming(et); err != nil {
		return err
	}
	o.ServerName = cc.Node
	o.JetStream = true
	o.StoreDir = b.cfg.DataDir + "/jetstream"
	o.MaxPayload = 8 << 20 // past results travel between nodes in one reply
	o.Cluster = server.ClusterOpts{Name: name, Host: host, Port: port}
	for _, r := range cc.Routes {
		if !strings.Contains(r, "://") {
			r = "nats://" + r
		}
		u, err := url.Parse(r)
		if err != nil {
			return fmt.Errorf("--cluster-routes %q: %w", r, err)
		}
		o.Routes = append(o.Routes, u)
	}
	return b.secureRoutes(o)
}

func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", p)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	return host, port, nil
}

// startNode opens the cluster's topic registry and joins the cluster once
// JetStream answers (a new NATS cluster elects its JetStream leader
// first). It returns the node and the locator over the registry.
func (b *Broker) startNode(grid gateway.Grid) (*cluster.Node, *gateway.Locator, error) {
	cc := b.cfg.Cluster
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := cluster.Config{ID: cc.Node, NC: b.nc, Dir: b.cfg.DataDir, Shards: cc.shards(), Replicas: cc.Replicas,
		LeaseTTL: cc.LeaseTTL, LSM: &lsm.Options{BlockCacheSize: b.cfg.CacheBytes / 16, FS: b.cfg.FS},
		MaxBacklog: b.cfg.MaxBacklog, MaxBacklogBytes: b.cfg.MaxBacklogBytes, Log: b.log}
	cfg.Store.Limits, cfg.Store.CellsOnly = b.cfg.Limits, b.cfg.CellsOnly
	if b.cfg.Indexes != "none" {
		ix, err := catalog.ParseIndexes(b.cfg.Indexes)
		if err != nil {
			return nil, nil, fmt.Errorf("--index: %w", err)
		}
		// Unsynced: a shard's catalog is rebuilt from its log at every take.
		cfg.Catalog = func(dir string) (*catalog.Catalog, error) {
			return catalog.Open(dir, catalog.Config{Indexes: ix, Log: b.log, Options: &lsm.Options{BlockCacheSize: b.cfg.CacheBytes / 64, FS: b.cfg.FS}})
		}
	}
	var loc *gateway.Locator
	// An attempt's time doubles: creating the replicated buckets can take
	// longer than the first try allows on a loaded machine, and a fixed
	// short limit would cut every attempt off the same way.
	for attempt := 2 * time.Second; ; attempt = min(2*attempt, 16*time.Second) {
		actx, acancel := context.WithTimeout(ctx, attempt)
		var n *cluster.Node
		topics, err := cluster.OpenTopics(actx, b.nc, cc.Replicas, maxTopicDepth)
		if err == nil {
			loc, err = gateway.NewLocator(grid, topics)
		}
		if err == nil {
			cfg.Encode = loc.EncodePublication
			n, err = cluster.Start(actx, cfg)
		}
		acancel()
		if err == nil {
			return n, loc, nil
		}
		if errors.Is(err, cluster.ErrLayout) {
			return nil, nil, err
		}
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("joining the cluster (does JetStream run on a majority of the NATS servers?): %w", err)
		}
		b.log.Info("waiting for JetStream", "err", err)
		time.Sleep(500 * time.Millisecond)
	}
}

// shards is the shard layout cc names.
func (cc ClusterConfig) shards() cluster.Shards {
	return cluster.Shards{Depth: cc.ShardDepth, Groups: cc.ShardGroups, TopicDepth: cc.TopicShardDepth, TopicGroups: cc.TopicShardGroups, TopicSpread: cc.TopicSpread}
}

// maxTopicDepth is how deep a cluster's topic paths go: as deep as one
// broker's (listdb.Config.MaxTopicDepth's default).
const maxTopicDepth = 8

// pingSubject is answered by every broker, so that one starting on the
// same NATS servers can tell it would not be alone.
const pingSubject = "cellcast.brokers.ping"

// pongPrefix starts the subject a starting broker hears answers on.
const pongPrefix = pingSubject + ".pong."

type pong struct {
	Node    string `json:"node"`
	Cluster bool   `json:"cluster"`
}

// answerPings answers brokers that start on the same NATS servers.
func (b *Broker) answerPings() (*nats.Subscription, error) {
	me, _ := json.Marshal(pong{Node: b.cfg.Cluster.Node, Cluster: b.cfg.clustered()})
	return b.nc.Subscribe(pingSubject, func(m *nats.Msg) {
		// Only to a broker's pong subject: a reply subject is the
		// requester's to choose, and a pong on a user's notification
		// subject would be a forged message.
		if strings.HasPrefix(m.Reply, pongPrefix) {
			m.Respond(me)
		}
	})
}

// ErrNotAlone: another broker serves the request subjects on the same
// NATS servers, and the two would split requests between their stores.
var ErrNotAlone = errors.New("another Cellcast broker already serves the NATS request subjects")

// checkAlone refuses to start a single broker beside another broker, or
// a cluster node beside a single broker.
func (b *Broker) checkAlone() error {
	// The answers come under cellcast., not _INBOX.: a broker's NATS user
	// needs no more permissions than docs/security.md lists.
	inbox := pongPrefix + strings.TrimPrefix(nats.NewInbox(), nats.InboxPrefix)
	sub, err := b.nc.SubscribeSync(inbox)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	if err := b.nc.PublishRequest(pingSubject, inbox, nil); err != nil {
		return err
	}
	for {
		m, err := sub.NextMsg(300 * time.Millisecond)
		if err != nil {
			return nil // nobody else answered
		}
		var p pong
		if json.Unmarshal(m.Data, &p) != nil {
			continue
		}
		switch {
		case !b.cfg.clustered() && p.Cluster:
			return fmt.Errorf("%w: cluster node %q serves them on %s; start this broker as a node (--cluster-node) or on other NATS servers", ErrNotAlone, p.Node, b.NATSURL())
		case !b.cfg.clustered():
			return fmt.Errorf("%w on %s: two brokers would split requests between two stores and miss matches; give this one other NATS servers, or run both as cluster nodes (docs/cluster.md)", ErrNotAlone, b.NATSURL())
		case !p.Cluster:
			return fmt.Errorf("%w: a single broker serves them on %s; stop it before starting cluster nodes there", ErrNotAlone, b.NATSURL())
		}
	}
}

// serveClusterz answers GET /clusterz with the cluster as this node last
// saw it: 200 when every shard has a live owner, 503 while some have none
// (a node died and its shards are being taken over, or the cluster is
// starting). Unlike /readyz it is about the whole cluster, so it is for
// dashboards and alerts, not for a load balancer: one node's death turns
// it 503 on every node at once.
func (b *Broker) serveClusterz(w http.ResponseWriter, _ *http.Request) {
	if b.node == nil {
		http.Error(w, "not found: this broker is not a cluster node", http.StatusNotFound)
		return
	}
	st := b.node.Status()
	body := struct {
		Node     string   `json:"node"`
		Looked   bool     `json:"looked"`
		Shards   int      `json:"shards"`
		Owned    int      `json:"owned"`
		Unserved []string `json:"unserved"`
		// Servers are the JetStream meta group's, with an embedded server:
		// one stopped for good stays there, down, until it is removed.
		Servers []metaServer `json:"servers,omitempty"`
	}{Node: b.cfg.Cluster.Node, Looked: st.Looked, Shards: st.Shards, Owned: st.Owned, Unserved: st.Unserved}
	if body.Unserved == nil {
		body.Unserved = []string{}
	}
	if b.ns != nil {
		body.Servers, _, _, _ = b.metaGroup()
	}
	w.Header().Set("Content-Type", "application/json")
	if !st.Looked || len(st.Unserved) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	json.NewEncoder(w).Encode(body)
}
