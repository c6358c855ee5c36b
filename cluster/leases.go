package cluster

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The lease loop: a node renews its heartbeat and its shards' leases in
// the KV bucket, and takes shards whose leases lapsed or that the
// balance gives it.

// seenRev is a key's revision in the lease bucket and when this node
// first read it.
type seenRev struct {
	rev uint64
	at  time.Time
}

// run renews the node's heartbeat and leases, and balances shards.
func (n *Node) run() {
	defer close(n.done)
	t := time.NewTicker(n.cfg.LeaseTTL / 4)
	defer t.Stop()
	// Peers starting at the same time get a lease TTL to announce
	// themselves before this node takes shards: else the first one up
	// takes them all and hands most back a moment later.
	joined := time.Now()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.LeaseTTL)
		n.tick(ctx, time.Since(joined) >= n.cfg.LeaseTTL)
		cancel()
		select {
		case <-t.C:
		case <-n.stop:
			return
		}
	}
}

func (n *Node) tick(ctx context.Context, acquire bool) {
	// Renew first: a slow or failing read below must not let leases
	// lapse. The renewals go out together, and each waits a quarter TTL
	// at most: while the bucket elects a leader none is answered, and
	// waited for one after another they held up the reads below, so that
	// this node saw a dead node's last renewal late and judged its leases
	// stale seconds after the others did.
	n.nc.Publish(aliveSubject+n.cfg.ID, nil)
	// A write of its own tells the node whether the bucket takes writes,
	// even while it holds no lease. It may wait out an election (a
	// failure makes the node wait for half a TTL of writes before it
	// judges a lease stale), so it runs beside the rest of the tick.
	probed := make(chan error, 1)
	go func() {
		_, err := n.leases.Put(ctx, probeKey(n.cfg.ID), []byte(time.Now().UTC().Format(time.RFC3339)))
		probed <- err
	}()
	defer func() {
		if err := <-probed; err != nil {
			n.log.Warn("cluster: the lease bucket takes no writes", "err", err)
			n.writable = time.Time{}
		} else if n.writable.IsZero() {
			n.writable = time.Now()
		}
	}()
	mine := n.renew(ctx)
	alive, settled := n.liveNodes()
	all := n.cfg.Shards.All()
	groups := n.cfg.Shards.Balanced()
	// A fair share of each group of shards (Shards.Balanced), and how many
	// of it this node holds.
	share := func(g []string, nodes int) int { return (len(g) + nodes - 1) / nodes }
	target := func(g []string) int { return share(g, alive) }
	held := func(g []string) int {
		k := 0
		for _, s := range mine {
			if slices.Contains(g, s) {
				k++
			}
		}
		return k
	}
	groupOf := func(s string) []string {
		for _, g := range groups {
			if slices.Contains(g, s) {
				return g
			}
		}
		return nil
	}
	owners := map[string]string{}
	quiet := map[string]bool{}  // shards whose owner stopped renewing
	free := map[string]uint64{} // shard -> revision to take it at (0: absent)
	var order []string
	rctx, cancel := context.WithTimeout(ctx, n.cfg.LeaseTTL/4)
	leases, err := n.reader.read(rctx, all)
	cancel()
	if err != nil {
		n.log.Warn("cluster: reading the leases", "err", err)
		return
	}
	for _, s := range all {
		e, ok := leases[s]
		switch {
		case !ok:
			free[s] = 0
			order = append(order, s)
		case nodeOf(e.value) != n.cfg.ID && n.stale("lease "+s, e.rev):
			free[s] = e.rev // its owner stopped renewing
			order = append(order, s)
		case nodeOf(e.value) == n.cfg.ID && !slices.Contains(mine, s):
			// This node let the shard go (its log fenced it off, or it
			// failed to start) but the lease still names it: take it
			// again, as nobody else may while they hold their share.
			free[s] = e.rev
			order = append(order, s)
		default:
			owners[s] = e.value
			if nodeOf(e.value) != n.cfg.ID && time.Since(n.seen["lease "+s].at) > n.cfg.LeaseTTL/2 {
				quiet[s] = true // two renewals missed: its owner is not live
			}
		}
	}
	// More than a fair share of a group among settled nodes: hand the
	// last ones over.
	for _, g := range groups {
		for held(g) > share(g, settled) {
			i := len(mine) - 1 // the last of the group
			for !slices.Contains(g, mine[i]) {
				i--
			}
			s := mine[i]
			mine = slices.Delete(mine, i, i+1)
			n.mu.Lock()
			rev := n.revs[s]
			n.mu.Unlock()
			n.lose(s)
			if err := n.leases.Delete(ctx, s, jetstream.LastRevision(rev)); err != nil {
				n.log.Warn("cluster: releasing a lease", "shard", s, "err", err)
			}
			delete(owners, s)
			n.log.Info("cluster: shard released for balance", "shard", s, "target", share(g, settled))
		}
	}
	for _, s := range order {
		if !acquire {
			break
		}
		if g := groupOf(s); held(g) >= target(g) {
			continue
		}
		var rev uint64
		var err error
		value := n.leaseValue()
		if at := free[s]; at == 0 {
			rev, err = n.leases.Create(ctx, s, []byte(value))
		} else {
			rev, err = n.leases.Update(ctx, s, []byte(value), at)
		}
		if err != nil {
			continue // another node was first
		}
		n.mu.Lock()
		n.revs[s], n.renewed[s], n.values[s] = rev, time.Now(), value
		n.mu.Unlock()
		mine = append(mine, s)
		owners[s] = value
		n.spawn(func() { n.take(s) })
	}
	// Unserved: no live owner, or this node's take still loading its log.
	var unserved []string
	n.mu.Lock()
	for _, s := range all {
		_, taken := n.owned[s]
		if v, ok := owners[s]; !ok || quiet[s] || nodeOf(v) == n.cfg.ID && !taken {
			unserved = append(unserved, s)
		}
	}
	n.looked, n.unserved = true, unserved
	n.mu.Unlock()
	n.h.owners(owners)
}

// liveNodes counts the nodes (this one too) that size a fair share: for
// taking, every node heard within a TTL; for handing over, only those
// heard for a TTL without a break (settled), since a node takes nothing
// in its first TTL (run), and a shard handed to it sooner would wait
// unserved until then.
func (n *Node) liveNodes() (alive, settled int) {
	alive, settled = 1, 1
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, at := range n.heard {
		if id != n.cfg.ID && time.Since(at) < n.cfg.LeaseTTL {
			alive++
			if time.Since(n.since[id]) >= n.cfg.LeaseTTL {
				settled++
			}
		}
	}
	return alive, settled
}

// leaseValue names this node, its life and a new take of a shard:
// holders see a shard restarted by the same node as moved, and resume
// its routes. The life matters: a node killed and started again counts
// its takes from 1 again, and a retaken lease that read as before (n3#1
// both times) left every route of the shard unresumed, its
// notifications undelivered.
func (n *Node) leaseValue() string {
	n.takes++
	return n.cfg.ID + "#" + strconv.FormatUint(n.instance, 36) + "." + strconv.FormatUint(n.takes, 10)
}

// nodeOf is the node a lease value names.
func nodeOf(value string) string {
	id, _, _ := strings.Cut(value, "#")
	return id
}

// stale reports whether key's revision has not changed for a lease TTL,
// by this node's clock, while the bucket took this node's writes for half
// as long: its writer stopped, rather than the bucket. (A live owner
// renews within a quarter TTL of the bucket taking writes again.)
func (n *Node) stale(key string, rev uint64) bool {
	now := time.Now()
	if v, ok := n.seen[key]; !ok || v.rev != rev {
		n.seen[key] = seenRev{rev: rev, at: now}
		return false
	}
	ttl := n.cfg.LeaseTTL
	return now.Sub(n.seen[key].at) > ttl && !n.writable.IsZero() && now.Sub(n.writable) > ttl/2
}

// probeKey is the key of a node's own writes in the lease bucket.
func probeKey(node string) string { return "node." + node }

// renew renews the leases of the shards this node owns or is taking, all
// at once, each waiting a quarter TTL at most, and returns them. A lease
// whose revision moved on is lost; one the bucket cannot take a write for
// now is kept while a read shows it still ours.
func (n *Node) renew(ctx context.Context) []string {
	type renewal struct {
		s, value string
		rev, to  uint64 // to: the revision now
		at       time.Time
		err      error
		mine     bool // after a failed update: a read shows it ours
	}
	n.mu.Lock()
	var rs []*renewal
	for s, rev := range n.revs {
		rs = append(rs, &renewal{s: s, value: n.values[s], rev: rev, at: n.renewed[s]})
	}
	n.mu.Unlock()
	sort.Slice(rs, func(i, j int) bool { return rs[i].s < rs[j].s })
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			octx, cancel := context.WithTimeout(ctx, n.cfg.LeaseTTL/4)
			defer cancel()
			if r.to, r.err = n.leases.Update(octx, r.s, []byte(r.value), r.rev); r.err != nil {
				gctx, cancel := context.WithTimeout(ctx, n.cfg.LeaseTTL/4)
				defer cancel()
				r.to, r.mine = n.stillMine(gctx, r.s, r.rev, r.value)
			}
		}()
	}
	wg.Wait()
	var kept []string
	for _, r := range rs {
		switch {
		case r.err == nil:
			n.mu.Lock()
			if _, ok := n.revs[r.s]; ok {
				n.revs[r.s], n.renewed[r.s] = r.to, time.Now()
			}
			n.mu.Unlock()
		case r.mine:
			// The bucket takes no writes now (its leader is being
			// elected), but nobody else holds the lease: keep serving.
			// Were it taken meanwhile, the shard's log would refuse
			// this node's next append.
			n.log.Warn("cluster: renewing a lease", "shard", r.s, "err", r.err, "since", time.Since(r.at))
			n.mu.Lock()
			if n.revs[r.s] == r.rev {
				n.revs[r.s] = r.to
			}
			n.mu.Unlock()
		default:
			n.log.Warn("cluster: a lease was lost", "shard", r.s, "err", r.err)
			n.lose(r.s)
			continue
		}
		kept = append(kept, r.s)
	}
	return kept
}

// stillMine reports whether the lease of shard s still holds this
// node's value for this take, as far as a read (served by any replica)
// tells, and at which revision (rev when the read failed). A failed read
// counts as yes: the log's fencing guards against the rest. The revision
// may have moved past rev with the value still ours: a renewal that gave
// up waiting was written after all.
func (n *Node) stillMine(ctx context.Context, s string, rev uint64, value string) (uint64, bool) {
	e, err := n.leases.Get(ctx, s)
	if err != nil {
		return rev, !errors.Is(err, jetstream.ErrKeyNotFound)
	}
	return e.Revision(), e.Revision() >= rev && string(e.Value()) == value
}
