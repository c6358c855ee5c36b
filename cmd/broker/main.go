// Command broker runs Cellcast: go run ./cmd/broker --help lists the
// flags, each also read from a CELLCAST_* environment variable.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/seed84792017/cellcast/broker"
	"github.com/seed84792017/cellcast/catalog"
	"github.com/seed84792017/cellcast/cluster"
	"github.com/seed84792017/cellcast/gateway"
	"github.com/seed84792017/cellcast/geo"
	"github.com/seed84792017/cellcast/internal/flagenv"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/subscriptions"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "token" {
		os.Exit(token(os.Args[2:]))
	}
	os.Exit(run(os.Args[1:]))
}

// parseOrExit parses, and when the command should stop there returns its
// exit code: 0 after --help, 2 for a bad flag or variable.
func parseOrExit(fs *flag.FlagSet, args []string) (code int, ok bool) {
	usage := fmt.Sprintf("Usage: %s [flags]\n       %s token --uid UID [--ttl 24h] [--auth-issuer ISS] [--auth-audience AUD] --auth-hmac-secret-file FILE\n       (also: cellcast token)\n", fs.Name(), fs.Name())
	err := flagenv.Parse(fs, args, os.LookupEnv, usage)
	switch {
	case err == nil:
		return 0, true
	case err == flag.ErrHelp:
		return 0, false
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", fs.Name(), err)
	return 2, false
}

func run(args []string) int {
	fs := flag.NewFlagSet("broker", flag.ContinueOnError)
	var c broker.Config
	fs.StringVar(&c.DataDir, "data", "./data", "directory of the store (created if missing)")
	fs.StringVar(&c.HTTPAddr, "http", "127.0.0.1:8080", "address of the HTTP API, WebSocket /ws, /healthz, /readyz and the demo page /; also /metrics and /debug when it is loopback or --metrics-token is set, unless --metrics-listen moves them")
	fs.StringVar(&c.MetricsAddr, "metrics-listen", "", "address of a listener of its own for /metrics and /debug/pprof/ (keep it on loopback or give --metrics-token)")
	fs.StringVar(&c.MetricsToken, "metrics-token", "", "bearer token required on /metrics and /debug/pprof/ (prefer the environment variable: a flag shows in ps)")
	fs.StringVar(&c.TLSCert, "tls-cert", "", "PEM certificate (chain) for TLS on HTTP, WebSocket and the embedded NATS server; with --tls-key")
	fs.StringVar(&c.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.DurationVar(&c.HTTP.ReadHeaderTimeout, "http-header-timeout", 10*time.Second, "how long a client may take to send a request's headers")
	fs.DurationVar(&c.HTTP.ReadTimeout, "http-read-timeout", 30*time.Second, "how long a client may take to send a whole HTTP request")
	fs.DurationVar(&c.HTTP.WriteTimeout, "http-write-timeout", 30*time.Second, "how long an HTTP reply may take (WebSockets have --write-timeout instead)")
	fs.DurationVar(&c.HTTP.IdleTimeout, "http-idle-timeout", 2*time.Minute, "how long an idle keep-alive HTTP connection stays open")
	fs.IntVar(&c.HTTP.MaxHeaderBytes, "max-header-bytes", 16<<10, "largest HTTP request header")
	fs.IntVar(&c.HTTP.MaxConns, "max-conns", 0, "open HTTP connections, WebSockets included (and the embedded NATS server's clients); past it new ones are closed at once (0: the file descriptor limit less 1,024)")
	fs.Float64Var(&c.HTTP.ConnRatePerIP, "conn-rate-per-ip", 200, "new connections per second from one source address, in bursts of --conn-burst-per-ip; past it they are closed at once (negative: no bound)")
	fs.IntVar(&c.HTTP.ConnBurstPerIP, "conn-burst-per-ip", 2000, "burst of new connections from one source address")
	fs.StringVar(&c.NATSURL, "nats-url", "", "external NATS server URL; empty embeds one")
	fs.StringVar(&c.NATSListen, "nats-listen", "127.0.0.1:4222", "client address of the embedded NATS server")
	fs.StringVar(&c.NATSToken, "nats-token", "", "the broker's token for an external NATS server")
	fs.BoolVar(&c.NATSRequireIsolation, "nats-require-isolation", false, "refuse to start when an external NATS server lets a client without credentials read other users' replies or notifications, or denies the broker a permission it needs (default: a warning)")
	fs.StringVar(&c.Storage, "storage", "dualdb", "storage architecture: dualdb or twodb")
	fs.StringVar(&c.TokensFile, "auth-tokens", "", "file of \"token uid\" lines: bearer tokens clients may present")
	fs.StringVar(&c.HMACSecretFile, "auth-hmac-secret-file", "", "file holding the secret (≥ 32 bytes) that signs HS256 JWT bearer tokens; the uid is the \"sub\" claim. Both auth files are read again on SIGHUP")
	fs.StringVar(&c.AuthIssuer, "auth-issuer", "", "required \"iss\" claim of JWTs (empty: not checked)")
	fs.StringVar(&c.AuthAudience, "auth-audience", "", "required \"aud\" claim of JWTs (empty: not checked)")
	fs.DurationVar(&c.AuthLeeway, "auth-leeway", 5*time.Second, "clock skew forgiven on the \"exp\" and \"nbf\" claims of JWTs")
	fs.BoolVar(&c.AuthAllowNoExpiry, "auth-allow-no-expiry", false, "accept JWTs without an \"exp\" claim (they never expire: only a new secret retires them)")
	fs.IntVar(&c.Grid.Level, "geo-level", geo.DefaultLevel, "S2 level a lat/lng point is indexed at, and the deepest a cover goes (1-30; 16: cells about 150 m across)")
	fs.IntVar(&c.Grid.Cover, "cover", gateway.DefaultCover, "cells a circle or a polygon is covered by when its request gives no cover")
	fs.IntVar(&c.Grid.MaxCover, "max-cover", subscriptions.MaxCover, "most cells a request's cover may ask for (1-16)")
	fs.Float64Var(&c.Limits.MaxRadiusM, "max-radius", 100_000, "largest circle radius accepted, in metres")
	fs.IntVar(&c.Limits.MaxVertices, "max-vertices", 1024, "most vertices a polygon may have, all rings together (at most 4096)")
	fs.IntVar(&c.Limits.MaxDepth, "max-depth", geo.MaxDepth, "deepest Dewey id accepted")
	fs.BoolVar(&c.CellsOnly, "bench-cells-only", false, "benchmarks only: match by cells alone, without exact geometry (subscribers then hear of places that do not meet theirs)")
	fs.DurationVar(&c.Limits.MaxPast, "max-past", time.Hour, "longest past window of a subscription")
	fs.DurationVar(&c.Limits.MaxFuture, "max-future", time.Hour, "longest future window of a subscription")
	fs.DurationVar(&c.Limits.MaxExpiry, "max-expiry", 24*time.Hour, "longest lifetime of a publication")
	fs.IntVar(&c.Gateway.MaxFrame, "max-frame", 64<<10, "largest request in bytes")
	fs.IntVar(&c.Gateway.MaxSubscriptions, "max-subscriptions", 10_000, "live subscriptions per WebSocket connection")
	fs.Float64Var(&c.Gateway.Rate, "rate", 2000, "requests per second per WebSocket connection")
	fs.IntVar(&c.Gateway.Burst, "burst", 4000, "request burst per WebSocket connection")
	fs.Float64Var(&c.Gateway.UserRate, "user-rate", 1000, "requests per second per authenticated user, over every transport and connection")
	fs.IntVar(&c.Gateway.UserBurst, "user-burst", 2000, "request burst per authenticated user")
	fs.IntVar(&c.Gateway.UserSubscriptions, "user-subscriptions", 50_000, "live subscriptions per authenticated user, over every transport")
	fs.IntVar(&c.Gateway.UserConnections, "user-connections", 64, "WebSocket connections per authenticated user, and as many NATS connections on the embedded server")
	fs.IntVar(&c.Gateway.UserNewTopics, "user-new-topics", 60, "topics an authenticated user may create per minute")
	fs.IntVar(&c.Gateway.MaxTopics, "max-topics", 100_000, "topics in the registry, all users together")
	fs.IntVar(&c.Gateway.SendQueue, "send-queue", 16<<10, "messages queued per WebSocket connection; past it a subscription falls behind and catches up from the store once the client has read the queue down to half")
	fs.IntVar(&c.Gateway.SendQueueBytes, "send-queue-bytes", 8<<20, "bytes queued per WebSocket connection, like --send-queue")
	fs.IntVar(&c.Gateway.ReplyBudget, "reply-budget", 256<<10, "largest reply in bytes: past results, a self-join publish's recent and query results beyond it arrive in pages (on NATS also at most the server's max payload less 1 KiB)")
	fs.DurationVar(&c.Gateway.WriteTimeout, "write-timeout", 10*time.Second, "how long a write to a client may stall before the client is cut as not reading")
	fs.IntVar(&c.MaxBacklog, "max-backlog", 1_000_000, "notifications owed to subscribers and not yet handed to their connections; past it publishes are refused with overloaded")
	backlogMiB := fs.Int64("max-backlog-mib", 256, "the same bound in MiB of publications and notifications")
	fs.DurationVar(&c.MaxLag, "max-lag", 2*time.Second, "while a quarter or more of the connections holding subscriptions have been behind this long and still read, publishes are refused with overloaded, so what they missed does not expire in the store (keep it well under publications' lifetimes)")
	durability := fs.String("durability", "sync", "what a write has reached when it is acknowledged: sync (the WAL is fsynced: survives a crash of the process or the machine; concurrent requests share fsyncs) or os (the WAL is written to the OS: survives kill -9 of the broker, not an OS crash or power loss)")
	legacySync := fs.Bool("sync", false, "same as --durability sync, the default (kept for old scripts)")
	fs.StringVar(&c.Indexes, "index", catalog.DefaultIndexes, "the publication attributes the query op can search, as attr=strategy pairs: attr is uid, tp or an attrs key; strategy is embedded, eager, lazy, composite, deli or bloom-hierarchy (docs/secondary-indexes.md); none for no catalog")
	origins := fs.String("allowed-origins", "", "comma-separated origins (scheme://host:port) whose web pages may open a WebSocket besides the broker's own; * for any")
	fs.BoolVar(&c.Pprof, "pprof", false, "serve Go profiles at /debug/pprof/, where /metrics is served")
	cacheMiB := fs.Int("cache-mib", 128, "block cache size in MiB")
	fs.StringVar(&c.Cluster.Node, "cluster-node", "", "run as this node of a cluster (docs/cluster.md): a unique id of letters, digits, - and _; empty runs alone")
	fs.StringVar(&c.Cluster.Listen, "cluster-listen", "127.0.0.1:6222", "cluster (route) address of the embedded NATS server, for the other nodes' --cluster-routes")
	routes := fs.String("cluster-routes", "", "comma-separated host:port cluster addresses of the other nodes' embedded NATS servers")
	fs.StringVar(&c.Cluster.Name, "cluster-name", "cellcast", "name of the NATS cluster; the same on every node")
	fs.IntVar(&c.Cluster.ShardDepth, "shard-depth", cluster.DefaultShardDepth, "Dewey depth of the grid's subtrees hashed onto the geo shards (2-31; S2 level + 1; 11: cells of 7-10 km); the same on every node")
	fs.IntVar(&c.Cluster.ShardGroups, "shard-groups", cluster.DefaultShardGroups, "geo shards the subtrees are hashed onto, besides the overflow shard (1-256); the same on every node")
	fs.IntVar(&c.Cluster.TopicShardDepth, "topic-shard-depth", 1, "how many levels of a topic path place it in one of the 4 topic shards: 1 keeps a top-level topic in one shard, deeper spreads it by subtopic (1-4); the same on every node")
	fs.IntVar(&c.Cluster.Replicas, "replicas", 3, "replicas of each shard's JetStream log (1, 3 or 5; at most the number of NATS servers)")
	fs.DurationVar(&c.Cluster.LeaseTTL, "lease-ttl", 2*time.Second, "how long after a node stops its shards move to the others")
	fs.DurationVar(&c.Cluster.ElectionTimeout, "cluster-election-timeout", broker.DefaultElectionTimeout, "how long the embedded NATS server's JetStream replicas wait for a leader before electing another (up to twice it; heartbeats every quarter of it); it bounds failover when a node dies with its NATS server; at least 500ms; unused with --nats-url")
	memLimitMiB := fs.Int64("memory-limit-mib", 448, "soft limit of the Go runtime's memory (debug.SetMemoryLimit): near it the garbage collector runs more often rather than let the heap double; 0 for none; GOMEMLIMIT in the environment overrides it")
	grace := fs.Duration("shutdown-timeout", 30*time.Second, "how long a shutdown may take to drain clients")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	format := fs.String("log-format", "text", "text or json")
	if code, ok := parseOrExit(fs, args); !ok {
		return code
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		fmt.Fprintln(os.Stderr, "broker: --log-level:", err)
		return 2
	}
	hopts := &slog.HandlerOptions{Level: lv}
	switch *format {
	case "text":
		c.Log = slog.New(slog.NewTextHandler(os.Stderr, hopts))
	case "json":
		c.Log = slog.New(slog.NewJSONHandler(os.Stderr, hopts))
	default:
		fmt.Fprintln(os.Stderr, "broker: --log-format: text or json")
		return 2
	}
	for _, o := range strings.Split(*origins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			c.AllowedOrigins = append(c.AllowedOrigins, o)
		}
	}
	for _, r := range strings.Split(*routes, ",") {
		if r = strings.TrimSpace(r); r != "" {
			c.Cluster.Routes = append(c.Cluster.Routes, r)
		}
	}
	if c.Cluster.Node != "" && (c.Cluster.ShardDepth < 2 || c.Cluster.ShardDepth > 31 || c.Cluster.ShardGroups < 1 || c.Cluster.ShardGroups > 256 || c.Cluster.TopicShardDepth < 1 || c.Cluster.TopicShardDepth > 4 || c.Cluster.Replicas < 1 || c.Cluster.LeaseTTL < 500*time.Millisecond || c.Cluster.ElectionTimeout < broker.MinElectionTimeout) {
		fmt.Fprintln(os.Stderr, "broker: --shard-depth 2 to 31, --shard-groups 1 to 256, --topic-shard-depth 1 to 4, --replicas at least 1, --lease-ttl and --cluster-election-timeout at least 500ms")
		return 2
	}
	c.CacheBytes = int64(*cacheMiB) << 20
	if *memLimitMiB < 0 {
		fmt.Fprintln(os.Stderr, "broker: --memory-limit-mib must not be negative")
		return 2
	}
	if *memLimitMiB > 0 && os.Getenv("GOMEMLIMIT") == "" {
		// Without a limit the heap grows to twice what is live before a
		// collection (GOGC=100): 100k live subscriptions peaked at 560
		// MiB of RSS with about half of it garbage.
		debug.SetMemoryLimit(*memLimitMiB << 20)
	}
	c.MaxBacklogBytes = *backlogMiB << 20
	if c.MaxBacklog <= 0 || c.MaxBacklogBytes <= 0 || c.MaxLag <= 0 || c.Gateway.SendQueue <= 0 || c.Gateway.SendQueueBytes <= 0 || c.Gateway.WriteTimeout <= 0 || c.Gateway.ReplyBudget <= 0 {
		fmt.Fprintln(os.Stderr, "broker: --max-backlog, --max-backlog-mib, --max-lag, --send-queue, --send-queue-bytes, --write-timeout and --reply-budget must be positive")
		return 2
	}
	g, h := c.Gateway, c.HTTP
	if g.UserRate <= 0 || g.UserBurst <= 0 || g.UserSubscriptions <= 0 || g.UserConnections <= 0 || g.UserNewTopics <= 0 || g.MaxTopics <= 0 ||
		h.ReadHeaderTimeout <= 0 || h.ReadTimeout <= 0 || h.WriteTimeout <= 0 || h.IdleTimeout <= 0 || h.MaxHeaderBytes <= 0 || h.MaxConns < 0 || h.ConnRatePerIP == 0 || h.ConnBurstPerIP <= 0 || c.AuthLeeway < 0 {
		fmt.Fprintln(os.Stderr, "broker: the --user-* quotas, --max-topics, --http-*-timeout, --max-header-bytes and --conn-burst-per-ip must be positive, --max-conns and --auth-leeway not negative, --conn-rate-per-ip not zero")
		return 2
	}
	d, err := listdb.ParseDurability(*durability)
	if err != nil || d == listdb.Buffered {
		fmt.Fprintln(os.Stderr, "broker: --durability: sync or os")
		return 2
	}
	if *legacySync {
		d = listdb.Synced
	}
	c.Durability = d
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := broker.Run(ctx, c, *grace); err != nil {
		c.Log.Error("broker failed", "err", err)
		return 1
	}
	return 0
}

// token mints an HS256 bearer token.
func token(args []string) int {
	fs := flag.NewFlagSet("broker token", flag.ContinueOnError)
	uid := fs.String("uid", "", "the user the token stands for")
	ttl := fs.Duration("ttl", 24*time.Hour, "validity; 0 for no expiry, which the broker refuses unless --auth-allow-no-expiry")
	secret := fs.String("auth-hmac-secret-file", "", "the broker's HMAC secret file")
	iss := fs.String("auth-issuer", "", "the \"iss\" claim, when the broker requires one")
	aud := fs.String("auth-audience", "", "the \"aud\" claim, when the broker requires one")
	if code, ok := parseOrExit(fs, args); !ok {
		return code
	}
	if *uid == "" || *secret == "" {
		fmt.Fprintln(os.Stderr, "broker token: --uid and --auth-hmac-secret-file are required")
		return 2
	}
	h, err := broker.LoadHMAC(*secret)
	if err == nil {
		h.Issuer, h.Audience = *iss, *aud
		var tok string
		if tok, err = h.Sign(*uid, *ttl); err == nil {
			fmt.Println(tok)
			return 0
		}
	}
	fmt.Fprintln(os.Stderr, "broker token:", err)
	return 1
}
