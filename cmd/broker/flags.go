package main

import (
	"flag"
	"time"

	"github.com/seed84792017/cellcast/broker"
	"github.com/seed84792017/cellcast/catalog"
	"github.com/seed84792017/cellcast/cluster"
	"github.com/seed84792017/cellcast/gateway"
	"github.com/seed84792017/cellcast/geo"
	"github.com/seed84792017/cellcast/subscriptions"
)

// settings are the broker's flags: the Config they fill, and those that
// run turns into it.
type settings struct {
	c                       broker.Config
	backlogMiB, memLimitMiB *int64
	cacheMiB                *int
	durability              *string
	legacySync              *bool
	origins, routes         *string
	grace                   *time.Duration
	level, format           *string
	config                  *string
	version                 *bool
}

// brokerFlags defines every flag of the broker; each is also a
// CELLCAST_* variable and a key of the --config file, but for --version.
func brokerFlags() (*flag.FlagSet, *settings) {
	fs := flag.NewFlagSet("broker", flag.ContinueOnError)
	s := &settings{}
	s.config = fs.String("config", "", "TOML file of flag-name = value lines (docs/operations.md has one with every flag); the command line and CELLCAST_* variables win over it")
	s.version = fs.Bool("version", false, "print the version and exit")
	fs.StringVar(&s.c.DataDir, "data", "./data", "directory of the store (created if missing)")
	fs.StringVar(&s.c.HTTPAddr, "http", "127.0.0.1:8080", "address of the HTTP API, WebSocket /ws, /healthz, /readyz and the demo page /; also /metrics and /debug when it is loopback or --metrics-token is set, unless --metrics-listen moves them")
	fs.StringVar(&s.c.MetricsAddr, "metrics-listen", "", "address of a listener of its own for /metrics and /debug/pprof/ (keep it on loopback or give --metrics-token)")
	fs.StringVar(&s.c.MetricsToken, "metrics-token", "", "bearer token required on /metrics, /admin/ and /debug/pprof/ (prefer the environment variable: a flag shows in ps)")
	fs.StringVar(&s.c.TLSCert, "tls-cert", "", "PEM certificate (chain) for TLS on HTTP, WebSocket and the embedded NATS server; with --tls-key")
	fs.StringVar(&s.c.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.DurationVar(&s.c.HTTP.ReadHeaderTimeout, "http-header-timeout", 10*time.Second, "how long a client may take to send a request's headers")
	fs.DurationVar(&s.c.HTTP.ReadTimeout, "http-read-timeout", 30*time.Second, "how long a client may take to send a whole HTTP request")
	fs.DurationVar(&s.c.HTTP.WriteTimeout, "http-write-timeout", 30*time.Second, "how long an HTTP reply may take (WebSockets have --write-timeout instead)")
	fs.DurationVar(&s.c.HTTP.IdleTimeout, "http-idle-timeout", 2*time.Minute, "how long an idle keep-alive HTTP connection stays open")
	fs.IntVar(&s.c.HTTP.MaxHeaderBytes, "max-header-bytes", 16<<10, "largest HTTP request header")
	fs.IntVar(&s.c.HTTP.MaxConns, "max-conns", 0, "open HTTP connections, WebSockets included (and the embedded NATS server's clients); past it new ones are closed at once (0: the file descriptor limit less 1,024)")
	fs.Float64Var(&s.c.HTTP.ConnRatePerIP, "conn-rate-per-ip", 200, "new connections per second from one source address, in bursts of --conn-burst-per-ip; past it they are closed at once (negative: no bound)")
	fs.IntVar(&s.c.HTTP.ConnBurstPerIP, "conn-burst-per-ip", 2000, "burst of new connections from one source address")
	fs.StringVar(&s.c.NATSURL, "nats-url", "", "external NATS server URL; empty embeds one")
	fs.StringVar(&s.c.NATSListen, "nats-listen", "127.0.0.1:4222", "client address of the embedded NATS server")
	fs.StringVar(&s.c.NATSToken, "nats-token", "", "the broker's token for an external NATS server")
	fs.BoolVar(&s.c.NATSRequireIsolation, "nats-require-isolation", false, "refuse to start when an external NATS server lets a client without credentials read other users' replies or notifications, or denies the broker a permission it needs (default: a warning)")
	fs.StringVar(&s.c.Storage, "storage", "dualdb", "storage architecture: dualdb or twodb")
	fs.StringVar(&s.c.TokensFile, "auth-tokens", "", "file of \"token uid\" lines: bearer tokens clients may present")
	fs.StringVar(&s.c.HMACSecretFile, "auth-hmac-secret-file", "", "file holding the secret (≥ 32 bytes) that signs HS256 JWT bearer tokens; the uid is the \"sub\" claim. Both auth files are read again on SIGHUP")
	fs.StringVar(&s.c.AuthIssuer, "auth-issuer", "", "required \"iss\" claim of JWTs (empty: not checked)")
	fs.StringVar(&s.c.AuthAudience, "auth-audience", "", "required \"aud\" claim of JWTs (empty: not checked)")
	fs.DurationVar(&s.c.AuthLeeway, "auth-leeway", 5*time.Second, "clock skew forgiven on the \"exp\" and \"nbf\" claims of JWTs")
	fs.BoolVar(&s.c.AuthAllowNoExpiry, "auth-allow-no-expiry", false, "accept JWTs without an \"exp\" claim (they never expire: only a new secret retires them)")
	fs.IntVar(&s.c.Grid.Level, "geo-level", geo.DefaultLevel, "S2 level a lat/lng point is indexed at, and the deepest a cover goes (1-30; 16: cells about 150 m across)")
	fs.IntVar(&s.c.Grid.Cover, "cover", gateway.DefaultCover, "cells a circle or a polygon is covered by when its request gives no cover")
	fs.IntVar(&s.c.Grid.MaxCover, "max-cover", subscriptions.MaxCover, "most cells a request's cover may ask for (1-16)")
	fs.Float64Var(&s.c.Limits.MaxRadiusM, "max-radius", 100_000, "largest circle radius accepted, in metres")
	fs.IntVar(&s.c.Limits.MaxVertices, "max-vertices", 1024, "most vertices a polygon may have, all rings together (at most 4096)")
	fs.IntVar(&s.c.Limits.MaxDepth, "max-depth", geo.MaxDepth, "deepest Dewey id accepted")
	fs.BoolVar(&s.c.CellsOnly, "bench-cells-only", false, "benchmarks only: match by cells alone, without exact geometry (subscribers then hear of places that do not meet theirs)")
	fs.DurationVar(&s.c.Limits.MaxPast, "max-past", time.Hour, "longest past window of a subscription")
	fs.DurationVar(&s.c.Limits.MaxFuture, "max-future", time.Hour, "longest future window of a subscription")
	fs.DurationVar(&s.c.Limits.MaxExpiry, "max-expiry", 24*time.Hour, "longest lifetime of a publication")
	fs.IntVar(&s.c.Gateway.MaxFrame, "max-frame", 64<<10, "largest request in bytes")
	fs.IntVar(&s.c.Gateway.MaxSubscriptions, "max-subscriptions", 10_000, "live subscriptions per WebSocket connection")
	fs.Float64Var(&s.c.Gateway.Rate, "rate", 2000, "requests per second per WebSocket connection")
	fs.IntVar(&s.c.Gateway.Burst, "burst", 4000, "request burst per WebSocket connection")
	fs.Float64Var(&s.c.Gateway.UserRate, "user-rate", 1000, "requests per second per authenticated user, over every transport and connection")
	fs.IntVar(&s.c.Gateway.UserBurst, "user-burst", 2000, "request burst per authenticated user")
	fs.IntVar(&s.c.Gateway.UserSubscriptions, "user-subscriptions", 50_000, "live subscriptions per authenticated user, over every transport")
	fs.IntVar(&s.c.Gateway.UserConnections, "user-connections", 64, "WebSocket connections per authenticated user, and as many NATS connections on the embedded server")
	fs.IntVar(&s.c.Gateway.UserNewTopics, "user-new-topics", 60, "topics an authenticated user may create per minute")
	fs.IntVar(&s.c.Gateway.MaxTopics, "max-topics", 100_000, "topics in the registry, all users together")
	fs.IntVar(&s.c.Gateway.SendQueue, "send-queue", 16<<10, "messages queued per WebSocket connection; past it a subscription falls behind and catches up from the store once the client has read the queue down to half")
	fs.IntVar(&s.c.Gateway.SendQueueBytes, "send-queue-bytes", 8<<20, "bytes queued per WebSocket connection, like --send-queue")
	fs.IntVar(&s.c.Gateway.ReplyBudget, "reply-budget", 256<<10, "largest reply in bytes: past results, a self-join publish's recent and query results beyond it arrive in pages (on NATS also at most the server's max payload less 1 KiB)")
	fs.DurationVar(&s.c.Gateway.WriteTimeout, "write-timeout", 10*time.Second, "how long a write to a client may stall before the client is cut as not reading")
	fs.IntVar(&s.c.MaxBacklog, "max-backlog", 1_000_000, "notifications owed to subscribers and not yet handed to their connections; past it publishes are refused with overloaded")
	s.backlogMiB = fs.Int64("max-backlog-mib", 256, "the same bound in MiB of publications and notifications")
	fs.DurationVar(&s.c.MaxLag, "max-lag", 2*time.Second, "while a quarter or more of the connections holding subscriptions have been behind this long and still read, publishes are refused with overloaded, so what they missed does not expire in the store (keep it well under publications' lifetimes)")
	s.durability = fs.String("durability", "sync", "what a write has reached when it is acknowledged: sync (the WAL is fsynced: survives a crash of the process or the machine; concurrent requests share fsyncs) or os (the WAL is written to the OS: survives kill -9 of the broker, not an OS crash or power loss)")
	s.legacySync = fs.Bool("sync", false, "same as --durability sync, the default (kept for old scripts)")
	fs.StringVar(&s.c.Indexes, "index", catalog.DefaultIndexes, "the publication attributes the query op can search, as attr=strategy pairs: attr is uid, tp or an attrs key; strategy is embedded, eager, lazy, composite, deli or bloom-hierarchy (docs/secondary-indexes.md); none for no catalog")
	s.origins = fs.String("allowed-origins", "", "comma-separated origins (scheme://host:port) whose web pages may open a WebSocket besides the broker's own; * for any")
	fs.BoolVar(&s.c.Pprof, "pprof", false, "serve Go profiles at /debug/pprof/, where /metrics is served")
	s.cacheMiB = fs.Int("cache-mib", 128, "block cache size in MiB")
	fs.StringVar(&s.c.Cluster.Node, "cluster-node", "", "run as this node of a cluster (docs/cluster.md): a unique id of letters, digits, - and _; empty runs alone")
	fs.StringVar(&s.c.Cluster.Listen, "cluster-listen", "127.0.0.1:6222", "cluster (route) address of the embedded NATS server, for the other nodes' --cluster-routes")
	s.routes = fs.String("cluster-routes", "", "comma-separated host:port cluster addresses of the other nodes' embedded NATS servers")
	fs.StringVar(&s.c.Cluster.Name, "cluster-name", "cellcast", "name of the NATS cluster; the same on every node")
	fs.StringVar(&s.c.Cluster.Security.PasswordFile, "cluster-password-file", "", "file holding the routes' shared password (one line, 16+ characters; the same on every node); required, with the --cluster-tls-* flags, when --cluster-listen is beyond loopback")
	fs.StringVar(&s.c.Cluster.Security.User, "cluster-user", "cellcast", "user name of the routes' password")
	fs.StringVar(&s.c.Cluster.Security.TLSCert, "cluster-tls-cert", "", "this node's route certificate (PEM), valid for its --cluster-listen address and signed by --cluster-tls-ca")
	fs.StringVar(&s.c.Cluster.Security.TLSKey, "cluster-tls-key", "", "the key of --cluster-tls-cert (PEM)")
	fs.StringVar(&s.c.Cluster.Security.TLSCA, "cluster-tls-ca", "", "the CA (PEM) that signed every node's route certificate: routes are TLS, verified both ways")
	fs.IntVar(&s.c.Cluster.ShardDepth, "shard-depth", cluster.DefaultShardDepth, "Dewey depth of the grid's subtrees hashed onto the geo shards (2-31; S2 level + 1; 11: cells of 7-10 km); the same on every node")
	fs.IntVar(&s.c.Cluster.ShardGroups, "shard-groups", cluster.DefaultShardGroups, "geo shards the subtrees are hashed onto, besides the overflow shard (1-256); the same on every node")
	fs.IntVar(&s.c.Cluster.TopicShardDepth, "topic-shard-depth", 1, "how many levels of a topic path place it in one of the topic shards: 1 keeps a top-level topic in one shard, deeper spreads it by subtopic (1-4); the same on every node")
	fs.IntVar(&s.c.Cluster.TopicShardGroups, "topic-shard-groups", cluster.DefaultTopicGroups, "topic shards (1-256): with --topic-shard-depth 2 or more, the most shards a busy top-level topic spreads over; the same on every node")
	fs.BoolVar(&s.c.Cluster.TopicSpread, "topic-spread", false, "place topic subscriptions in the topic shards by user, and store every topic publication in every topic shard: a busy topic's subscribers, a top-level topic's own included, spread over the nodes, for one log append per topic shard per publication; the same on every node")
	fs.IntVar(&s.c.Cluster.Replicas, "replicas", cluster.DefaultReplicas, "replicas of each shard's JetStream log (1, 3 or 5; at most the number of NATS servers)")
	fs.DurationVar(&s.c.Cluster.LeaseTTL, "lease-ttl", cluster.DefaultLeaseTTL, "how long after a node stops its shards move to the others")
	fs.DurationVar(&s.c.Cluster.ElectionTimeout, "cluster-election-timeout", broker.DefaultElectionTimeout, "how long the embedded NATS server's JetStream replicas wait for a leader before electing another (up to twice it; heartbeats every quarter of it); it bounds failover when a node dies with its NATS server; at least 500ms; unused with --nats-url")
	s.memLimitMiB = fs.Int64("memory-limit-mib", 448, "soft limit of the Go runtime's memory (debug.SetMemoryLimit): near it the garbage collector runs more often rather than let the heap double; 0 for none; GOMEMLIMIT in the environment overrides it")
	s.grace = fs.Duration("shutdown-timeout", 30*time.Second, "how long a shutdown may take to drain clients")
	s.level = fs.String("log-level", "info", "debug, info, warn or error")
	s.format = fs.String("log-format", "text", "text or json")
	return fs, s
}
