// Command broker runs Cellcast: go run ./cmd/broker --help lists the
// flags, each also read from a CELLCAST_* environment variable and from
// the --config file.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/seed84792017/cellcast/broker"
	"github.com/seed84792017/cellcast/internal/buildinfo"
	"github.com/seed84792017/cellcast/internal/flagenv"
	"github.com/seed84792017/cellcast/listdb"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr))
}

const usage = `Usage: broker [--config FILE] [flags]
       broker version
       broker token --uid UID [--ttl 24h] [--auth-issuer ISS] [--auth-audience AUD] --auth-hmac-secret-file FILE
       (also: cellcast token)
`

// parseOrExit parses, and when the command should stop there returns its
// exit code: 0 after --help, 2 for a bad flag, variable or config file.
func parseOrExit(fs *flag.FlagSet, args []string, o flagenv.Options, stderr io.Writer) (code int, ok bool) {
	fs.SetOutput(stderr)
	err := flagenv.ParseWith(fs, args, o)
	switch {
	case err == nil:
		return 0, true
	case err == flag.ErrHelp:
		return 0, false
	}
	fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
	return 2, false
}

// brokerOptions say where the broker's flags come from besides the
// command line.
func brokerOptions(lookup func(string) (string, bool)) flagenv.Options {
	return flagenv.Options{Lookup: lookup, Usage: usage, Config: "config", CommandLineOnly: []string{"version"}}
}

// run is the broker command: it returns the exit code. A broker it starts
// serves until SIGTERM or SIGINT, or until ctx ends.
func run(ctx context.Context, args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "token":
			return token(args[1:], lookup, stdout, stderr)
		case "version":
			fmt.Fprintln(stdout, "broker "+buildinfo.Read().String())
			return 0
		}
	}
	fs, s := brokerFlags()
	if code, ok := parseOrExit(fs, args, brokerOptions(lookup), stderr); !ok {
		return code
	}
	if *s.version {
		fmt.Fprintln(stdout, "broker "+buildinfo.Read().String())
		return 0
	}
	c := s.c
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*s.level)); err != nil {
		fmt.Fprintln(stderr, "broker: --log-level:", err)
		return 2
	}
	hopts := &slog.HandlerOptions{Level: lv}
	switch *s.format {
	case "text":
		c.Log = slog.New(slog.NewTextHandler(stderr, hopts))
	case "json":
		c.Log = slog.New(slog.NewJSONHandler(stderr, hopts))
	default:
		fmt.Fprintln(stderr, "broker: --log-format: text or json")
		return 2
	}
	for _, o := range strings.Split(*s.origins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			c.AllowedOrigins = append(c.AllowedOrigins, o)
		}
	}
	for _, r := range strings.Split(*s.routes, ",") {
		if r = strings.TrimSpace(r); r != "" {
			c.Cluster.Routes = append(c.Cluster.Routes, r)
		}
	}
	if c.Cluster.Node != "" && (c.Cluster.ShardDepth < 2 || c.Cluster.ShardDepth > 31 || c.Cluster.ShardGroups < 1 || c.Cluster.ShardGroups > 256 || c.Cluster.TopicShardDepth < 1 || c.Cluster.TopicShardDepth > 4 || c.Cluster.TopicShardGroups < 1 || c.Cluster.TopicShardGroups > 256 || c.Cluster.Replicas < 1 || c.Cluster.LeaseTTL < 500*time.Millisecond || c.Cluster.ElectionTimeout < broker.MinElectionTimeout) {
		fmt.Fprintln(stderr, "broker: --shard-depth 2 to 31, --shard-groups 1 to 256, --topic-shard-depth 1 to 4, --topic-shard-groups 1 to 256, --replicas at least 1, --lease-ttl and --cluster-election-timeout at least 500ms")
		return 2
	}
	c.CacheBytes = int64(*s.cacheMiB) << 20
	if *s.memLimitMiB < 0 {
		fmt.Fprintln(stderr, "broker: --memory-limit-mib must not be negative")
		return 2
	}
	if *s.memLimitMiB > 0 && os.Getenv("GOMEMLIMIT") == "" {
		// Without a limit the heap grows to twice what is live before a
		// collection (GOGC=100): 100k live subscriptions peaked at 560
		// MiB of RSS with about half of it garbage.
		debug.SetMemoryLimit(*s.memLimitMiB << 20)
	}
	c.MaxBacklogBytes = *s.backlogMiB << 20
	if c.MaxBacklog <= 0 || c.MaxBacklogBytes <= 0 || c.MaxLag <= 0 || c.Gateway.SendQueue <= 0 || c.Gateway.SendQueueBytes <= 0 || c.Gateway.WriteTimeout <= 0 || c.Gateway.ReplyBudget <= 0 {
		fmt.Fprintln(stderr, "broker: --max-backlog, --max-backlog-mib, --max-lag, --send-queue, --send-queue-bytes, --write-timeout and --reply-budget must be positive")
		return 2
	}
	g, h := c.Gateway, c.HTTP
	if g.UserRate <= 0 || g.UserBurst <= 0 || g.UserSubscriptions <= 0 || g.UserConnections <= 0 || g.UserNewTopics <= 0 || g.MaxTopics <= 0 ||
		h.ReadHeaderTimeout <= 0 || h.ReadTimeout <= 0 || h.WriteTimeout <= 0 || h.IdleTimeout <= 0 || h.MaxHeaderBytes <= 0 || h.MaxConns < 0 || h.ConnRatePerIP == 0 || h.ConnBurstPerIP <= 0 || c.AuthLeeway < 0 {
		fmt.Fprintln(stderr, "broker: the --user-* quotas, --max-topics, --http-*-timeout, --max-header-bytes and --conn-burst-per-ip must be positive, --max-conns and --auth-leeway not negative, --conn-rate-per-ip not zero")
		return 2
	}
	d, err := listdb.ParseDurability(*s.durability)
	if err != nil || d == listdb.Buffered {
		fmt.Fprintln(stderr, "broker: --durability: sync or os")
		return 2
	}
	if *s.legacySync {
		d = listdb.Synced
	}
	c.Durability = d
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := broker.Run(ctx, c, *s.grace); err != nil {
		c.Log.Error("broker failed", "err", err)
		return 1
	}
	return 0
}

// token mints an HS256 bearer token.
func token(args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("broker token", flag.ContinueOnError)
	uid := fs.String("uid", "", "the user the token stands for")
	ttl := fs.Duration("ttl", 24*time.Hour, "validity; 0 for no expiry, which the broker refuses unless --auth-allow-no-expiry")
	secret := fs.String("auth-hmac-secret-file", "", "the broker's HMAC secret file")
	iss := fs.String("auth-issuer", "", "the \"iss\" claim, when the broker requires one")
	aud := fs.String("auth-audience", "", "the \"aud\" claim, when the broker requires one")
	// As for cellcast token: CELLCAST_UID is the user a command acts as,
	// CELLCAST_TOKEN_UID the user a token is minted for.
	env := func(name string) string {
		if name == "uid" || name == "ttl" {
			return flagenv.Name("token-" + name)
		}
		return flagenv.Name(name)
	}
	if code, ok := parseOrExit(fs, args, flagenv.Options{Lookup: lookup, Usage: usage, Env: env}, stderr); !ok {
		return code
	}
	if *uid == "" || *secret == "" {
		fmt.Fprintln(stderr, "broker token: --uid and --auth-hmac-secret-file are required")
		return 2
	}
	h, err := broker.LoadHMAC(*secret)
	if err == nil {
		h.Issuer, h.Audience = *iss, *aud
		var tok string
		if tok, err = h.Sign(*uid, *ttl); err == nil {
			fmt.Fprintln(stdout, tok)
			return 0
		}
	}
	fmt.Fprintln(stderr, "broker token:", err)
	return 1
}
