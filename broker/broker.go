package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seed84792017/cellcast/auth"
	"github.com/seed84792017/cellcast/catalog"
	"github.com/seed84792017/cellcast/cluster"
	"github.com/seed84792017/cellcast/demo"
	"github.com/seed84792017/cellcast/dualdb"
	"github.com/seed84792017/cellcast/gateway"
	"github.com/seed84792017/cellcast/internal/buildinfo"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/lsm"
	"github.com/seed84792017/cellcast/lsm/vfs"
	"github.com/seed84792017/cellcast/service"
	"github.com/seed84792017/cellcast/subscriptions"
	"github.com/seed84792017/cellcast/twodb"
)

// Config shapes a broker. Zero fields take the defaults noted.
type Config struct {
	DataDir  string // default "./data"
	HTTPAddr string // HTTP API, /ws, health; default 127.0.0.1:8080 (port 0 picks one)
	// NATSURL points at an external NATS server; empty embeds one listening
	// on NATSListen (default 127.0.0.1:4222; port 0 picks one).
	NATSURL    string
	NATSListen string
	NATSToken  string // the broker's own token for an external server
	Storage    string // "dualdb" (default) or "twodb"
	// Auth: either or both. Without any, the broker runs open, which it
	// allows only when every listener and the NATS connection stay on
	// loopback. Both files are read again by Reload (SIGHUP).
	TokensFile     string
	HMACSecretFile string
	// JWT checks: the required "iss" and "aud" (empty: not checked), the
	// clock skew forgiven on "exp" and "nbf" (zero: none), and whether a
	// JWT without "exp" is accepted (by default it is refused).
	AuthIssuer, AuthAudience string
	AuthLeeway               time.Duration
	AuthAllowNoExpiry        bool
	// TLSCert and TLSKey (PEM files) turn on TLS for HTTP and WebSocket
	// and for the embedded NATS server's clients.
	TLSCert, TLSKey string
	// MetricsAddr serves /metrics, /admin/ and /debug/pprof/ on a listener
	// of their own. Empty: on the HTTP address, but only if that is loopback or
	// MetricsToken is set.
	MetricsAddr string
	// MetricsToken, when set, is required as a bearer token on /metrics,
	// /admin/ and /debug/pprof/.
	MetricsToken string
	// NATSRequireIsolation refuses to start when an external NATS server
	// lets a client without credentials read other users' replies or
	// notifications, or denies the broker a permission it needs
	// (otherwise a warning).
	NATSRequireIsolation bool
	// HTTP bounds the HTTP server: timeouts, header size, connections.
	HTTP HTTPLimits

	// Grid: the S2 level of points, and how many cells cover a circle or
	// a polygon (gateway.Grid; defaults level 16, cover 8, at most 16).
	Grid   gateway.Grid
	Limits subscriptions.Limits
	// CellsOnly matches by cells alone, without exact geometry: a
	// benchmark's baseline (listdb.Config.CellsOnly), never for users.
	CellsOnly bool
	Gateway   gateway.Limits
	// Durability is what a write has reached when it is acknowledged:
	// listdb.Synced (the zero value, the default), or listdb.Written.
	Durability listdb.Durability
	CacheBytes int64 // block cache; default listdb.DefaultCacheBudget
	// MaxBacklog and MaxBacklogBytes bound the notifications owed and not
	// yet handed to connections; past them publishes are refused with
	// overloaded. Defaults 1,000,000 and 256 MiB.
	MaxBacklog      int
	MaxBacklogBytes int64
	// MaxLag: while a quarter of the connections holding subscriptions
	// have been behind for longer, and still read, publishes are refused
	// with overloaded (delivery.Config). Default 2 s.
	MaxLag time.Duration
	Pprof  bool // serve /debug/pprof/ where /metrics is served
	// FS is the store's file system; nil is the OS's. Tests inject disk
	// faults through it (lsm/vfs).
	FS vfs.FS
	// Indexes are the catalog's "attr=strategy" list for the query op;
	// default catalog.DefaultIndexes, "none" for no catalog.
	Indexes string
	// AllowedOrigins are the web origins, besides the broker's own, whose
	// pages may open a WebSocket ("*" for any); default none.
	AllowedOrigins []string
	// Cluster makes the broker a node of a cluster; zero: it runs alone.
	Cluster ClusterConfig
	Log     *slog.Logger
}

// Broker is a running broker.
type Broker struct {
	cfg     Config
	log     *slog.Logger
	store   *listdb.Store
	catalog *catalog.Catalog
	ns      *server.Server
	nc      *nats.Conn
	// natsSystem is the token of the embedded server's system account,
	// set on a cluster node (removenode.go).
	natsSystem string
	svc        *service.Service // nil on a cluster node
	node       *cluster.Node    // nil when alone
	pings      *nats.Subscription
	gw         *gateway.Gateway
	stopNATS   func() error
	http       *http.Server
	ln         net.Listener
	metrics    *http.Server // nil when metrics share the HTTP listener
	mln        net.Listener
	auth       *auth.Swap // nil in open mode
	ready      atomic.Bool
	served     chan error
}

func (c *Config) withDefaults() {
	if c.DataDir == "" {
		c.DataDir = "./data"
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = "127.0.0.1:8080"
	}
	if c.NATSListen == "" {
		c.NATSListen = "127.0.0.1:4222"
	}
	if c.Storage == "" {
		c.Storage = "dualdb"
	}
	if c.Indexes == "" {
		c.Indexes = catalog.DefaultIndexes
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	c.HTTP = c.HTTP.withDefaults()
}

func (c *Config) verifier() (auth.Verifier, error) {
	var any auth.Any
	if c.TokensFile != "" {
		t, err := auth.LoadTokens(c.TokensFile)
		if err != nil {
			return nil, fmt.Errorf("auth tokens: %w", err)
		}
		any = append(any, t)
	}
	if c.HMACSecretFile != "" {
		h, err := LoadHMAC(c.HMACSecretFile)
		if err != nil {
			return nil, err
		}
		h.Issuer, h.Audience, h.Leeway, h.AllowNoExpiry = c.AuthIssuer, c.AuthAudience, c.AuthLeeway, c.AuthAllowNoExpiry
		any = append(any, h)
	}
	if len(any) == 0 {
		return nil, nil
	}
	return any, nil
}

// LoadHMAC reads an HMAC secret file (auth.LoadHMAC).
func LoadHMAC(path string) (*auth.HMAC, error) { return auth.LoadHMAC(path) }

// Start opens the store, connects NATS and serves. On error, whatever
// was opened is closed again.
func Start(cfg Config) (_ *Broker, err error) {
	cfg.withDefaults()
	b := &Broker{cfg: cfg, log: cfg.Log, served: make(chan error, 1)}
	build := buildinfo.Read()
	b.log.Info("starting broker", "version", build.Version, "revision", build.Revision, "go", build.GoVersion)
	defer func() {
		if err != nil {
			b.abort()
		}
	}()
	v, err := cfg.verifier()
	if err != nil {
		return nil, err
	}
	if err := b.checkExposure(v); err != nil {
		return nil, err
	}
	var verifier auth.Verifier // stays a nil interface in open mode
	if v != nil {
		b.auth = auth.NewSwap(v)
		verifier = b.auth
	}
	tlsConf, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	if cfg.Grid.MaxVertices == 0 {
		cfg.Grid.MaxVertices = cfg.Limits.WithDefaults().MaxVertices
	}
	grid, err := cfg.Grid.WithDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Limits.MaxDepth != 0 && cfg.Limits.MaxDepth < grid.Level+1 {
		return nil, fmt.Errorf("max depth %d is below the depth of the geo level's cells, %d", cfg.Limits.MaxDepth, grid.Level+1)
	}
	if err := b.bind(); err != nil {
		return nil, err
	}
	if cfg.clustered() {
		if err := b.connectNATS(verifier, tlsConf); err != nil {
			return nil, err
		}
		if err := b.checkAlone(); err != nil {
			return nil, err
		}
	} else {
		if err := b.openStore(); err != nil {
			return nil, err
		}
		if err := b.openCatalog(); err != nil {
			return nil, err
		}
		if b.catalog != nil {
			if _, err := b.catalog.Reconcile(context.Background(), b.store); err != nil {
				return nil, fmt.Errorf("reconciling the catalog with the store: %w", err)
			}
		}
		if err := b.connectNATS(verifier, tlsConf); err != nil {
			return nil, err
		}
		if cfg.NATSURL != "" {
			if err := b.checkAlone(); err != nil {
				return nil, err
			}
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerBuildInfo(reg, build)
	var core gateway.Core
	var loc *gateway.Locator
	if cfg.clustered() {
		if b.node, loc, err = b.startNode(grid); err != nil {
			return nil, err
		}
		core = b.node
		registerNode(reg, b.node)
	} else {
		if loc, err = gateway.NewLocator(grid, b.store.Topics()); err != nil {
			return nil, err
		}
		// The service owns the store and the catalog from here on.
		b.svc = service.New(service.Config{Store: b.store, Catalog: b.catalog, Encode: loc.EncodePublication,
			MaxBacklog: cfg.MaxBacklog, MaxBacklogBytes: cfg.MaxBacklogBytes, MaxLag: cfg.MaxLag, Log: b.log})
		core = b.svc
		registerService(reg, b.svc)
		names := []string{"dualdb"}
		if cfg.Storage == "twodb" {
			names = []string{"pubs", "subs"}
		}
		reg.MustRegister(newEngineCollector(b.store, names))
	}
	b.gw = gateway.New(gateway.Config{Service: core, Locator: loc, Auth: verifier, Limits: cfg.Gateway, Metrics: gateway.NewMetrics(reg), Log: b.log,
		AllowedOrigins: cfg.AllowedOrigins})
	if b.stopNATS, err = b.gw.ServeNATS(b.nc); err != nil {
		return nil, fmt.Errorf("nats subscriptions: %w", err)
	}
	if b.pings, err = b.answerPings(); err != nil {
		return nil, fmt.Errorf("nats subscriptions: %w", err)
	}
	if cfg.NATSURL != "" {
		if err := checkOwnPermissions(b.nc); err != nil {
			if cfg.NATSRequireIsolation {
				return nil, err
			}
			b.log.Warn(err.Error())
		}
	}
	if err := b.listen(reg, tlsConf); err != nil {
		return nil, err
	}
	b.ready.Store(true)
	b.log.Info("broker ready", "http", b.ln.Addr().String(), "demo", b.demoURL(tlsConf != nil), "nats", b.NATSURL(), "storage", cfg.Storage, "data", cfg.DataDir,
		"auth", verifier != nil, "tls", tlsConf != nil, "cluster_node", cfg.Cluster.Node)
	return b, nil
}

func (b *Broker) openStore() error {
	if err := checkGrid(b.cfg.DataDir); err != nil {
		return err
	}
	b.removeStaleBackups()
	cfg := listdb.Config{Limits: b.cfg.Limits, Durability: b.cfg.Durability, CellsOnly: b.cfg.CellsOnly}
	opts := &lsm.Options{BlockCacheSize: b.cfg.CacheBytes, FS: b.cfg.FS}
	var err error
	switch b.cfg.Storage {
	case "dualdb":
		b.store, err = dualdb.Open(b.cfg.DataDir, cfg, opts)
	case "twodb":
		b.store, err = twodb.Open(b.cfg.DataDir, cfg, opts)
	default:
		return fmt.Errorf("storage %q: use dualdb or twodb", b.cfg.Storage)
	}
	if err != nil {
		return fmt.Errorf("opening %s in %s: %w", b.cfg.Storage, b.cfg.DataDir, err)
	}
	return nil
}

// openCatalog opens the publications' catalog in DataDir/catalog, unless
// Indexes is "none".
func (b *Broker) openCatalog() error {
	if b.cfg.Indexes == "none" {
		return nil
	}
	ix, err := catalog.ParseIndexes(b.cfg.Indexes)
	if err != nil {
		return fmt.Errorf("--index: %w", err)
	}
	// Not synced, whatever --durability says: the store is what a reply
	// promises, and at start Reconcile writes every live publication of
	// the store into the catalog again, so a row a crash lost comes back.
	// A synced catalog cost a second fsync per publication.
	b.catalog, err = catalog.Open(filepath.Join(b.cfg.DataDir, "catalog"), catalog.Config{Indexes: ix, Log: b.log,
		Options: &lsm.Options{BlockCacheSize: b.cfg.CacheBytes / 4}})
	if errors.Is(err, catalog.ErrBadIndexes) {
		return fmt.Errorf("--index %q: %w", b.cfg.Indexes, err)
	}
	if err != nil {
		return fmt.Errorf("opening the catalog: %w", err)
	}
	return nil
}

// demoURL is where a browser on this machine finds the demo page (routes
// serves it at / always): an address of every interface is reached as
// localhost.
func (b *Broker) demoURL(tls bool) string {
	host, port, _ := net.SplitHostPort(b.ln.Addr().String())
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + "/"
}

// HTTPAddr is the address the HTTP server listens on.
func (b *Broker) HTTPAddr() string { return b.ln.Addr().String() }

// NATSURL is the NATS server the broker uses.
func (b *Broker) NATSURL() string {
	if b.ns != nil {
		return b.ns.ClientURL()
	}
	return b.cfg.NATSURL
}

// Store is the broker's store.
func (b *Broker) Store() *listdb.Store { return b.store }

// Catalog is the broker's catalog of publications, nil when it keeps none.
func (b *Broker) Catalog() *catalog.Catalog { return b.catalog }

func (b *Broker) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", b.gw.ServeWS)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !b.ready.Load() || (b.nc != nil && !b.nc.IsConnected()) {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		if b.node != nil && !b.node.Status().Looked {
			http.Error(w, "not ready: this node has not read the cluster's leases yet", http.StatusServiceUnavailable)
			return
		}
		if b.svc == nil {
			// A cluster node: its shards' logs are in JetStream.
		} else if err := b.svc.Err(); err != nil {
			http.Error(w, "not ready: the store refuses writes (see the log): "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	mux.HandleFunc("GET /clusterz", b.serveClusterz)
	mux.HandleFunc("POST /api/{op}", b.gw.ServeHTTP)
	mux.HandleFunc("GET /cells", gateway.ServeCells) // the grid's outlines, for maps
	mux.Handle("/", demo.Handler())                  // the demo page (docs/demo.md)
	return mux
}

// operatorRoutes are /metrics, /admin/backup, /admin/cluster/remove and, with Pprof,
// /debug/pprof/: behind the metrics token when there is one.
func (b *Broker) operatorRoutes(mux *http.ServeMux, reg *prometheus.Registry) {
	h := http.NewServeMux()
	h.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	h.HandleFunc("/admin/backup", b.serveBackup)
	h.HandleFunc("/admin/cluster/remove", b.serveRemoveNode)
	if b.cfg.Pprof {
		h.HandleFunc("/debug/pprof/", pprof.Index)
		h.HandleFunc("/debug/pprof/profile", pprof.Profile)
		h.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	var guarded http.Handler = h
	if b.cfg.MetricsToken != "" {
		guarded = requireToken(b.cfg.MetricsToken, h)
	}
	mux.Handle("/metrics", guarded)
	mux.Handle("/debug/", guarded)
	mux.Handle("/admin/", guarded)
}

// Shutdown stops taking work, lets every client's queue drain, and
// flushes and closes the store.
func (b *Broker) Shutdown(ctx context.Context) error {
	b.ready.Store(false)
	b.log.Info("shutting down")
	var errs []error
	if b.http != nil {
		errs = append(errs, b.http.Shutdown(ctx))
	}
	if b.metrics != nil {
		errs = append(errs, b.metrics.Shutdown(ctx))
	}
	if b.stopNATS != nil {
		errs = append(errs, b.stopNATS())
	}
	if b.gw != nil {
		errs = append(errs, b.gw.Close(ctx))
	}
	if b.node != nil {
		errs = append(errs, b.node.Close()) // hands its shards over
	}
	if b.nc != nil {
		if b.nc.IsConnected() {
			errs = append(errs, b.nc.FlushTimeout(5*time.Second))
		}
		b.nc.Close()
	}
	if b.ns != nil {
		b.ns.Shutdown()
		b.ns.WaitForShutdown()
	}
	if b.svc != nil {
		errs = append(errs, b.svc.Close()) // the store and the catalog with it
	}
	err := errors.Join(errs...)
	if err != nil {
		b.log.Error("shutdown", "err", err)
	} else {
		b.log.Info("stopped cleanly")
	}
	return err
}

// abort closes what Start opened when it fails.
func (b *Broker) abort() {
	if b.ln != nil {
		b.ln.Close()
	}
	if b.mln != nil {
		b.mln.Close()
	}
	if b.stopNATS != nil {
		b.stopNATS()
	}
	if b.node != nil {
		b.node.Close()
	}
	if b.nc != nil {
		b.nc.Close()
	}
	if b.ns != nil {
		b.ns.Shutdown()
	}
	if b.svc != nil {
		b.svc.Close() // the store and the catalog with it
		return
	}
	if b.store != nil {
		b.store.Close()
	}
	if b.catalog != nil {
		b.catalog.Close()
	}
}

// Run starts a broker and serves until ctx ends, then shuts down within
// grace.
func Run(ctx context.Context, cfg Config, grace time.Duration) error {
	b, err := Start(cfg)
	if err != nil {
		return err
	}
	if b.auth != nil {
		go b.reloadOnHUP(ctx)
	}
	select {
	case <-ctx.Done():
	case err := <-b.served:
		b.log.Error("http server stopped", "err", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	return b.Shutdown(sctx)
}
