package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed84792017/cellcast/catalog"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/lsm"
	"github.com/seed84792017/cellcast/subscriptions"
)

// Config shapes a cluster node.
type Config struct {
	ID string // unique in the cluster; letters, digits, '-' and '_'
	// NC reaches a NATS cluster with JetStream; the node does not close it.
	NC     *nats.Conn
	Dir    string // data directory: shards are rebuilt under Dir/shards
	Shards Shards
	// Replicas of each shard's log and of the lease buckets; default 3.
	Replicas int
	// MaxAge is how long a shard's log keeps a record: at least the
	// longest life of a publication or subscription. Default: the
	// store's limits' longest expiry or future window, plus a minute.
	MaxAge time.Duration
	// LeaseTTL: a node that stops renewing loses its shards this long
	// (by the other nodes' clocks) after its last renewal, counted while
	// the lease bucket takes writes; default DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Store and LSM configure each shard's store (listdb.Config; its
	// Durability is ignored: the log makes writes durable).
	Store listdb.Config
	LSM   *lsm.Options
	// Encode renders a publication as clients receive it (required):
	// notifications and past results cross between nodes rendered.
	Encode func(*subscriptions.Publication) []byte
	// Catalog opens a shard's catalog of publications in dir, for
	// queries; nil: the cluster answers no queries.
	Catalog         func(dir string) (*catalog.Catalog, error)
	MaxBacklog      int
	MaxBacklogBytes int64
	Log             *slog.Logger
}

// Node is one member of a Cellcast cluster: it owns the shards its leases
// give it and serves any client, forwarding operations to the shards'
// owners (package doc).
type Node struct {
	cfg    Config
	log    *slog.Logger
	nc     *nats.Conn
	js     jetstream.JetStream
	leases jetstream.KeyValue
	reader *leaseReader // of the lease loop alone
	inbox  *nats.Subscription
	alive  *nats.Subscription // the other nodes' heartbeats
	limits subscriptions.Limits

	mu      sync.Mutex
	owned   map[string]*owner
	revs    map[string]uint64    // lease revisions of shards owned or being taken
	renewed map[string]time.Time // when each was last renewed
	owners  map[string]string    // shard -> owning node, as last read
	heard   map[string]time.Time // node -> when its heartbeat last arrived
	since   map[string]time.Time // node -> since when it has been heard without a break
	closed  bool
	// The lease loop's last look: whether there was one, and the shards
	// it found without a live owner.
	looked   bool
	unserved []string

	h *holder
	// Of the lease loop alone: when each lease was last seen to change,
	// and since when the lease bucket takes this node's writes.
	seen     map[string]seenRev
	writable time.Time
	takes    uint64            // shards taken, for lease values
	values   map[string]string // lease values of shards owned or being taken
	outMu    sync.Mutex
	outboxes map[string]sender // by holding node
	instance uint64            // this node's life, for the past results it numbers (refs.go)
	counters counters

	stop chan struct{}
	done chan struct{}
	// ctx ends when Close begins: the takes, restarts and hand-overs
	// running on the node's goroutines (spawn, counted in tasks) give up,
	// and Close waits for them.
	ctx    context.Context
	cancel context.CancelFunc
	tasks  sync.WaitGroup
}

// DefaultLeaseTTL is Config.LeaseTTL's default. With 1 s rather than 2 s,
// a killed node's shards were served again after a median 2.2 s rather
// than 3.7 s, the longest of 30 kills 4.3 s rather than 5.3 s (with
// broker.DefaultElectionTimeout 500 ms; bench/cmd/failover), and loaded
// runs lost no lease to a node that was only slow.
const DefaultLeaseTTL = time.Second

// DefaultReplicas is how many replicas each log and bucket has: the size
// of the smallest cluster that survives the loss of a node.
const DefaultReplicas = 3

// newNode is a node of cfg in a new life, not yet joined.
func newNode(cfg Config, lim subscriptions.Limits) *Node {
	n := &Node{cfg: cfg, log: cfg.Log.With("node", cfg.ID), nc: cfg.NC, limits: lim, owned: map[string]*owner{},
		revs: map[string]uint64{}, renewed: map[string]time.Time{}, owners: map[string]string{}, heard: map[string]time.Time{}, since: map[string]time.Time{}, seen: map[string]seenRev{}, values: map[string]string{}, stop: make(chan struct{}), done: make(chan struct{}),
		instance: rand.Uint64() | 1} // 0 names no life (appendRendered)
	n.ctx, n.cancel = context.WithCancel(context.Background())
	return n
}

// Start joins the cluster. It returns once the node's inbox is served;
// shards are taken in the background as leases allow.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if err := cfg.Shards.Validate(); err != nil {
		return nil, err
	}
	if cfg.ID == "" || !validID(cfg.ID) {
		return nil, fmt.Errorf("cluster: node id %q: use letters, digits, '-' and '_'", cfg.ID)
	}
	if cfg.Encode == nil {
		return nil, errors.New("cluster: Config.Encode is required")
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = DefaultReplicas
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	lim := cfg.Store.Limits.WithDefaults()
	if cfg.MaxAge == 0 {
		cfg.MaxAge = max(lim.MaxExpiry, lim.MaxFuture) + time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	n := newNode(cfg, lim)
	var err error
	if n.js, err = jetstream.New(cfg.NC); err != nil {
		return nil, err
	}
	// No TTL: a bucket electing a leader (4-9 s) would let every lease
	// lapse at once. Staleness is judged by each node (stale).
	if n.leases, err = n.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: leaseBucket,
		Description: "Cellcast: which node owns each shard", Replicas: cfg.Replicas, Storage: jetstream.FileStorage}); err != nil {
		return nil, fmt.Errorf("cluster: lease bucket: %w", err)
	}
	if err := n.checkLayout(ctx); err != nil {
		return nil, err
	}
	if n.reader, err = newLeaseReader(cfg.NC, leaseBucket); err != nil {
		return nil, err
	}
	n.h = newHolder(n)
	if n.inbox, err = cfg.NC.Subscribe(nodeSubject+cfg.ID+".>", n.h.receive); err != nil {
		n.reader.close()
		return nil, err
	}
	n.inbox.SetPendingLimits(-1, -1)
	// Who is alive goes over core NATS, not JetStream: it only balances
	// shards (the leases decide who owns them), and must not wait for a
	// bucket to elect a leader.
	if n.alive, err = cfg.NC.Subscribe(aliveSubject+"*", func(m *nats.Msg) {
		id, now := strings.TrimPrefix(m.Subject, aliveSubject), time.Now()
		n.mu.Lock()
		defer n.mu.Unlock()
		if string(m.Data) == leaving {
			// It hands its shards over now: count it out at once, so the
			// others take them at their next look, not a TTL later.
			delete(n.heard, id)
			delete(n.since, id)
			return
		}
		if at, ok := n.heard[id]; !ok || now.Sub(at) >= n.cfg.LeaseTTL {
			n.since[id] = now
		}
		n.heard[id] = now
	}); err != nil {
		n.reader.close()
		n.inbox.Unsubscribe()
		return nil, err
	}
	if _, err := n.leases.Put(ctx, probeKey(cfg.ID), []byte(time.Now().UTC().Format(time.RFC3339))); err != nil {
		n.reader.close()
		n.inbox.Unsubscribe()
		n.alive.Unsubscribe()
		return nil, fmt.Errorf("cluster: announcing node %s: %w", cfg.ID, err)
	}
	go n.run()
	return n, nil
}

// ErrLayout is returned by Start when the node would split the Dewey
// space into shards unlike the cluster it joins: a pair would then meet
// in no shard, and matching would silently break.
var ErrLayout = errors.New("cluster: shard layout differs from the cluster's")

// layoutKey, in the lease bucket, holds the cluster's shard layout: the
// first node to start writes it, and every later one must agree.
const layoutKey = "layout"

func (n *Node) checkLayout(ctx context.Context) error {
	want := n.cfg.Shards.String()
	_, err := n.leases.Create(ctx, layoutKey, []byte(want))
	if err == nil {
		return nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("cluster: recording the shard layout: %w", err)
	}
	e, err := n.leases.Get(ctx, layoutKey)
	if err != nil {
		return fmt.Errorf("cluster: reading the shard layout: %w", err)
	}
	if got := string(e.Value()); got != want {
		return fmt.Errorf("%w: this node has %s, the cluster %s (--shard-depth, --shard-groups, --topic-shard-depth, --topic-shard-groups and --topic-spread must be the same on every node)", ErrLayout, want, got)
	}
	return nil
}

func validID(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// take rebuilds shard s from its log and serves it, trying again while
// the log is unreachable (its stream electing a leader), until it
// succeeds or the lease is lost (it is renewed meanwhile).
func (n *Node) take(s string) {
	start := time.Now()
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		n.mu.Lock()
		value, leased := n.values[s], n.revs[s] != 0
		n.mu.Unlock()
		if !leased || n.closing() {
			return
		}
		// A JetStream request lost to a leader election is never answered:
		// each step of an attempt is short (stepTimeout), and the attempt
		// is tried again.
		ctx, cancel := context.WithTimeout(n.ctx, takeTimeout)
		o, err := openOwner(ctx, n, s, value)
		cancel()
		if err != nil {
			if n.ctx.Err() != nil {
				return
			}
			n.log.Warn("cluster: taking a shard; trying again", "shard", s, "err", err, "in", wait)
			select {
			case <-time.After(wait):
			case <-n.ctx.Done():
				return
			}
			continue
		}
		n.mu.Lock()
		keep := n.revs[s] != 0 && n.values[s] == value && !n.closed
		if keep {
			n.owned[s] = o
		}
		n.mu.Unlock()
		if !keep {
			o.close()
			return
		}
		n.log.Info("cluster: shard taken", "shard", s, "took", time.Since(start))
		return
	}
}

// takeTimeout bounds one attempt to rebuild a shard from its log. It
// must cover a whole replay (at most the stream's MaxAge of records);
// a stalled step fails the attempt much sooner (stepTimeout).
const takeTimeout = 5 * time.Minute

// restart rebuilds shard s after its log refused a write whose fate is
// unknown: the store may hold what the log does not. The node keeps the
// lease under a new value, so holders resume their routes.
func (n *Node) restart(s string) {
	n.mu.Lock()
	o := n.owned[s]
	delete(n.owned, s)
	rev := n.revs[s]
	n.mu.Unlock()
	if o != nil {
		o.close()
	}
	if rev == 0 {
		return
	}
	value := n.leaseValue()
	for {
		n.mu.Lock()
		rev, old := n.revs[s], n.values[s]
		n.mu.Unlock()
		if rev == 0 || n.closing() {
			return // lost meanwhile
		}
		ctx, cancel := context.WithTimeout(n.ctx, n.cfg.LeaseTTL)
		r, err := n.leases.Update(ctx, s, []byte(value), rev)
		if err == nil {
			cancel()
			n.mu.Lock()
			if n.revs[s] == rev {
				n.revs[s], n.values[s], n.renewed[s] = r, value, time.Now()
			}
			n.mu.Unlock()
			break
		}
		_, mine := n.stillMine(ctx, s, rev, old)
		cancel()
		n.mu.Lock()
		renewed := n.revs[s] != rev // the lease loop renewed it meanwhile
		n.mu.Unlock()
		if !mine && !renewed {
			n.log.Warn("cluster: a shard to rebuild lost its lease", "shard", s, "err", err)
			n.lose(s)
			return
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-n.ctx.Done():
			return
		}
	}
	n.take(s)
}

// spawn runs f on a goroutine of the node's, unless the node is closing:
// Close cancels n.ctx and waits for f to return.
func (n *Node) spawn(f func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	n.tasks.Add(1)
	go func() {
		defer n.tasks.Done()
		f()
	}()
}

func (n *Node) closing() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.closed
}

// lose stops serving shard s, if this node serves it.
func (n *Node) lose(s string) {
	n.mu.Lock()
	o := n.owned[s]
	delete(n.owned, s)
	delete(n.revs, s)
	delete(n.renewed, s)
	delete(n.values, s)
	n.mu.Unlock()
	if o != nil {
		o.close()
	}
}

// leased reports whether this node's lease view still gives it shard s
// under value (one take): an owner serves by this, never by what a
// request assumes.
func (n *Node) leased(s, value string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.values[s] == value
}

// Owned lists the shards this node serves.
func (n *Node) Owned() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for s := range n.owned {
		out = append(out, s)
	}
	return out
}

// Close hands the node's shards over and leaves the cluster.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	n.mu.Unlock()
	close(n.stop)
	<-n.done
	// No heartbeat goes out from here on: say so, so the others count this
	// node out before its shards' leases are deleted below.
	n.nc.Publish(aliveSubject+n.cfg.ID, []byte(leaving))
	n.nc.Flush()
	// No take, restart or hand-over starts from here on (spawn); those
	// running give up, and each shard is handed over below.
	n.cancel()
	n.tasks.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n.mu.Lock()
	var mine []string
	for s := range n.revs {
		mine = append(mine, s)
	}
	n.mu.Unlock()
	for _, s := range mine {
		n.mu.Lock()
		rev := n.revs[s]
		n.mu.Unlock()
		n.lose(s)
		n.leases.Delete(ctx, s, jetstream.LastRevision(rev))
	}
	n.alive.Unsubscribe()
	n.reader.close()
	n.leases.Delete(ctx, probeKey(n.cfg.ID))
	n.h.close()
	n.outMu.Lock()
	for _, b := range n.outboxes {
		b.close()
	}
	n.outboxes = nil
	n.outMu.Unlock()
	return n.inbox.Unsubscribe()
}

// Status is the cluster as a node saw it at its last look at the leases.
type Status struct {
	// Looked: the node has read the leases once, so it knows where to
	// send each operation: it can serve a client.
	Looked bool
	Shards int
	// Unserved are the shards whose lease nobody holds or whose owner
	// stopped renewing it: operations on them wait for a new owner.
	Unserved []string
	Owned    int // shards this node serves
}

// Status reports the cluster as this node last saw it.
func (n *Node) Status() Status {
	n.mu.Lock()
	defer n.mu.Unlock()
	return Status{Looked: n.looked, Shards: len(n.cfg.Shards.All()), Unserved: slices.Clone(n.unserved), Owned: len(n.owned)}
}
