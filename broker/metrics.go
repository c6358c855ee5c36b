package broker

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seed84792017/cellcast/cluster"
	"github.com/seed84792017/cellcast/internal/buildinfo"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/lsm"
	"github.com/seed84792017/cellcast/service"
)

// engineCollector exports the storage engines' metrics at scrape time.
type engineCollector struct {
	store *listdb.Store
	names []string // per engine: "dualdb", or "pubs" and "subs"

	levelBytes, levelTables, l0Sublevels, compactBytes, flushBytes, wamp, cacheHit, memtable, stalls, bgErrors *prometheus.Desc
}

func newEngineCollector(store *listdb.Store, names []string) *engineCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("cellcast_lsm_"+name, help, append([]string{"db"}, labels...), nil)
	}
	return &engineCollector{store: store, names: names,
		levelBytes:   d("level_bytes", "Bytes of tables in a level.", "level"),
		levelTables:  d("level_tables", "Tables in a level.", "level"),
		l0Sublevels:  d("l0_sublevels", "L0's depth: sorted runs a read may meet there; compaction starts at 4, writes stall at 12."),
		compactBytes: d("compaction_bytes_total", "Bytes compactions read (in) and wrote (out).", "dir"),
		flushBytes:   d("flush_bytes_total", "Bytes memtable flushes wrote."),
		wamp:         d("write_amplification", "Bytes written to disk per byte written by the user."),
		cacheHit:     d("block_cache_hit_ratio", "Block cache hits over lookups since start."),
		memtable:     d("memtable_bytes", "Bytes in the memtables."),
		stalls:       d("write_stalls_total", "Writes that waited for compaction."),
		bgErrors:     d("background_errors_total", "Failed WAL writes, flushes, compactions and MANIFEST updates; above zero, the engine refuses writes until a restart."),
	}
}

func (c *engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.levelBytes, c.levelTables, c.l0Sublevels, c.compactBytes, c.flushBytes, c.wamp, c.cacheHit, c.memtable, c.stalls, c.bgErrors} {
		ch <- d
	}
}

func (c *engineCollector) Collect(ch chan<- prometheus.Metric) {
	for i, m := range c.store.Backend().Metrics() {
		db := c.names[i]
		for l := range lsm.NumLevels {
			lv := strconv.Itoa(l)
			ch <- prometheus.MustNewConstMetric(c.levelBytes, prometheus.GaugeValue, float64(m.Levels[l].Size), db, lv)
			ch <- prometheus.MustNewConstMetric(c.levelTables, prometheus.GaugeValue, float64(m.Levels[l].NumFiles), db, lv)
		}
		ch <- prometheus.MustNewConstMetric(c.l0Sublevels, prometheus.GaugeValue, float64(m.L0Sublevels), db)
		ch <- prometheus.MustNewConstMetric(c.compactBytes, prometheus.CounterValue, float64(m.CompactBytesIn), db, "in")
		ch <- prometheus.MustNewConstMetric(c.compactBytes, prometheus.CounterValue, float64(m.CompactBytesOut), db, "out")
		ch <- prometheus.MustNewConstMetric(c.flushBytes, prometheus.CounterValue, float64(m.FlushBytes), db)
		ch <- prometheus.MustNewConstMetric(c.wamp, prometheus.GaugeValue, m.WriteAmp(), db)
		ratio := 0.0
		if n := m.BlockCacheHits + m.BlockCacheMisses; n > 0 {
			ratio = float64(m.BlockCacheHits) / float64(n)
		}
		ch <- prometheus.MustNewConstMetric(c.cacheHit, prometheus.GaugeValue, ratio, db)
		ch <- prometheus.MustNewConstMetric(c.memtable, prometheus.GaugeValue, float64(m.MemTableSize), db)
		ch <- prometheus.MustNewConstMetric(c.stalls, prometheus.CounterValue, float64(m.WriteStalls), db)
		ch <- prometheus.MustNewConstMetric(c.bgErrors, prometheus.CounterValue, float64(m.BackgroundErrors), db)
	}
}

// registerBuildInfo exports which build runs: a constant 1 whose labels
// say it, so dashboards can join on it and see a fleet's versions.
func registerBuildInfo(reg prometheus.Registerer, in buildinfo.Info) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "cellcast_build_info", Help: "1, labelled with the broker's module version, VCS revision and Go version.",
		ConstLabels: prometheus.Labels{"version": in.Version, "revision": in.Revision, "go": in.GoVersion}})
	g.Set(1)
	reg.MustRegister(g)
}

// registerService exports the core service's counters.
func registerService(reg prometheus.Registerer, svc *service.Service) {
	stat := func(f func(service.Stats) float64) func() float64 { return func() float64 { return f(svc.Stats()) } }
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cellcast_live_subscriptions", Help: "Subscriptions routed to a connected client."},
			stat(func(s service.Stats) float64 { return float64(s.Routes) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cellcast_publications_dispatched_total", Help: "Publications whose notifications were dispatched."},
			stat(func(s service.Stats) float64 { return float64(s.Publishings) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cellcast_matches_unrouted_total", Help: "Matches whose subscriber was not connected (a resume replays them)."},
			stat(func(s service.Stats) float64 { return float64(s.Unrouted) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cellcast_notifications_refused_total", Help: "Notifications a client's transport could not take (its subscription then lags and catches up from the store)."},
			stat(func(s service.Stats) float64 { return float64(s.Refused) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cellcast_delivery_backlog", Help: "Notifications stored publications owe that wait for the dispatcher."},
			stat(func(s service.Stats) float64 { return float64(s.Backlog) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cellcast_lagging_subscriptions", Help: "Subscriptions whose client fell behind and wait to catch up from the store."},
			stat(func(s service.Stats) float64 { return float64(s.Lagging) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cellcast_notifications_skipped_total", Help: "Notifications not queued for a lagging subscription (its catch-up replays them)."},
			stat(func(s service.Stats) float64 { return float64(s.Skipped) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cellcast_catch_ups_total", Help: "Lagging subscriptions replayed from the store."},
			stat(func(s service.Stats) float64 { return float64(s.CatchUps) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cellcast_publications_overloaded_total", Help: "Publications refused with overloaded because the delivery backlog was over its bound."},
			stat(func(s service.Stats) float64 { return float64(s.Overloaded) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cellcast_catalog_errors_total", Help: "Publications stored and delivered that the catalog failed to record (queries miss them)."},
			stat(func(s service.Stats) float64 { return float64(s.CatalogErrors) })),
	)
}

// registerNode exports a cluster node's counters.
func registerNode(reg prometheus.Registerer, n *cluster.Node) {
	stat := func(f func(cluster.Stats) float64) func() float64 { return func() float64 { return f(n.Stats()) } }
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cellcast_cluster_shards_owned", Help: "Shards this node serves."},
			stat(func(s cluster.Stats) float64 { return float64(s.Owned) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cellcast_cluster_shards_unserved", Help: "Shards of the cluster with no live owner at this node's last look at the leases: operations on them wait for the next owner (/clusterz lists them)."},
			func() float64 { return float64(len(n.Status().Unserved)) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cellcast_cluster_requests_total", Help: "Operations sent to shard owners over NATS."},
			stat(func(s cluster.Stats) float64 { return float64(s.Requests) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cellcast_cluster_replies_total", Help: "Answers this node's shards sent over NATS as messages of their own."},
			stat(func(s cluster.Stats) float64 { return float64(s.Replies) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cellcast_cluster_batched_replies_total", Help: "Answers this node's shards sent to other nodes inside notification batches."},
			stat(func(s cluster.Stats) float64 { return float64(s.BatchedReplies) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cellcast_cluster_notifications_total", Help: "Notifications this node's shards sent to the nodes holding their subscribers."},
			stat(func(s cluster.Stats) float64 { return float64(s.Notifications) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cellcast_cluster_notification_batches_total", Help: "NATS messages that carried those notifications, ended routes and batched answers, in batches."},
			stat(func(s cluster.Stats) float64 { return float64(s.Batches) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cellcast_cluster_log_appends_total", Help: "Batches appended to shard logs (JetStream publishes)."},
			stat(func(s cluster.Stats) float64 { return float64(s.Appends) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cellcast_cluster_past_refs_total", Help: "Past results this node's shards sent to other nodes by number, as renderings those nodes keep."},
			stat(func(s cluster.Stats) float64 { return float64(s.PastRefs) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cellcast_cluster_past_rendered_total", Help: "Past results this node's shards sent to other nodes as renderings."},
			stat(func(s cluster.Stats) float64 { return float64(s.PastRendered) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cellcast_cluster_lost_refs_total", Help: "Subscribe replies this node failed (unavailable) for naming past results it no longer kept; it then asks for renderings again."},
			stat(func(s cluster.Stats) float64 { return float64(s.LostRefs) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cellcast_cluster_gaps_total", Help: "Subscriptions this node resumed at their shard's owner because a notification was lost on its way here (repaired by the owner's replay)."},
			stat(func(s cluster.Stats) float64 { return float64(s.Gaps) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cellcast_cluster_flush_errors_total", Help: "Batches of notifications and answers to other nodes that NATS refused; each is kept and sent again."},
			stat(func(s cluster.Stats) float64 { return float64(s.FlushErrors) })),
		ownedShards{n, prometheus.NewDesc("cellcast_cluster_shard_owned", "1 for each shard this node serves, by name.", []string{"shard"}, nil)},
	)
}

// ownedShards is a series per shard the node serves, so an operator can
// see where each shard lives.
type ownedShards struct {
	n    *cluster.Node
	desc *prometheus.Desc
}

func (o ownedShards) Describe(ch chan<- *prometheus.Desc) { ch <- o.desc }

func (o ownedShards) Collect(ch chan<- prometheus.Metric) {
	for _, s := range o.n.Owned() {
		ch <- prometheus.MustNewConstMetric(o.desc, prometheus.GaugeValue, 1, s)
	}
}
