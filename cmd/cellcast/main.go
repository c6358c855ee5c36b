// Command cellcast talks to a Cellcast broker from the shell:
//
//	cellcast sub --cell 5.2 --future 30s            past results, then live notifications
//	cellcast sub --lat 40.758 --lng -73.9855 --radius 500
//	cellcast pub --cell 5.2.1 --expires 1m --desc hello
//	cellcast pub --polygon area.geojson --desc closed
//	cellcast query --attr uid --eq alice
//	cellcast query --near 40.758,-73.9855,1000 --attr category --eq traffic
//	cellcast query --within area.geojson --from 2026-11-21T10:00:00Z
//	cellcast token --uid alice --auth-hmac-secret-file FILE
//	cellcast --version
//
// Every flag can also be set by an environment variable, which --help
// shows: CELLCAST_SERVER, CELLCAST_TOKEN, CELLCAST_UID, CELLCAST_JSON and
// CELLCAST_TIMEOUT for the connection flags of every command, the
// broker's CELLCAST_AUTH_* for token's, and CELLCAST_<COMMAND>_<FLAG>
// for the rest (CELLCAST_PUB_ATTR), so that each means one thing.
//
// Against a broker in open mode the uid is the OS user's name unless
// --uid says otherwise; under auth it is the token's. Over NATS the token
// may also come in the URL (--server nats://TOKEN@HOST:4222).
//
// Exit codes: 0 done, 1 failed, 2 bad usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"os/user"
	"strings"
	"syscall"
	"time"

	"github.com/seed84792017/cellcast/client"
	"github.com/seed84792017/cellcast/internal/buildinfo"
)

const usage = `Usage: cellcast COMMAND [flags]

Commands:
  sub     subscribe: print past results, then live notifications until the window ends or ^C
  pub     publish
  query   the latest publications by publisher, attribute or time (--attr),
          or that meet a place (--near LAT,LNG,RADIUS or --within FILE.geojson)
  token   mint an HS256 bearer token from the broker's secret, as broker token does
  backup  copy a running broker's store into a new data directory (--out DIR)
  remove-node
          remove a stopped cluster node for good (--node ID), through a running one
  version print the version (also cellcast --version)

Places are anywhere on Earth: --lat/--lng (a point), with --radius (a circle),
or --polygon FILE (GeoJSON). Cells are S2 cells as Dewey ids (5.2.1: face 4,
then child positions, each plus one).

cellcast COMMAND --help lists a command's flags and their environment
variables. Exit codes: 0 done, 1 failed, 2 bad usage.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], env{lookup: os.LookupEnv, user: osUser, stdin: os.Stdin}, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// env is what the commands take from the process, so tests can set it.
type env struct {
	lookup func(string) (string, bool)
	user   func() string
	stdin  io.Reader // for --polygon - and --within -; nil: none
}

func osUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return os.Getenv("USER")
}

// run runs one command and returns the exit code: 0, 1 on failure, 2 on
// bad usage.
func run(ctx context.Context, args []string, e env, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmds := map[string]func(context.Context, []string, env, io.Writer, io.Writer) int{
		"sub": sub, "pub": pub, "query": query, "token": token, "version": version, "backup": backup,
		"remove-node": removeNode,
	}
	name := args[0]
	if name == "--version" || name == "-version" {
		name = "version"
	}
	cmd, ok := cmds[name]
	if !ok {
		if name == "help" || name == "-h" || name == "--help" {
			fmt.Fprint(stdout, usage)
			return 0
		}
		fmt.Fprintf(stderr, "cellcast: unknown command %q\n\n%s", name, usage)
		return 2
	}
	return cmd(ctx, args[1:], e, stdout, stderr)
}

func version(_ context.Context, args []string, _ env, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		return usageError(stderr, "version", fmt.Sprintf("unexpected argument %q", args[0]))
	}
	fmt.Fprintln(stdout, "cellcast "+buildinfo.Read().String())
	return 0
}

// conn holds the flags every command that talks to a broker has.
type conn struct {
	server, token, uid string
	json               bool
	timeout            time.Duration
}

func (c *conn) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.server, "server", "ws://127.0.0.1:8080/ws", "the broker: a WebSocket URL (ws://, wss://) or a NATS one (nats://; nats://TOKEN@HOST:4222 carries the token)")
	fs.StringVar(&c.token, "token", "", "bearer token (mint one with cellcast token); it names the user")
	fs.StringVar(&c.uid, "uid", "", "the user to act as when the broker runs open (default: the OS user's name; under auth the token's)")
	fs.BoolVar(&c.json, "json", false, "print JSON objects, one per line")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "how long to wait for the connection and for each reply")
}

// check refuses connection flags no dial could use.
func (c *conn) check() error {
	if c.timeout <= 0 {
		return fmt.Errorf("--timeout %v: must be positive", c.timeout)
	}
	return nil
}

// options are the client's options; the uid defaults to the OS user's
// when no token names one (in --token, or in a NATS URL).
func (c *conn) options(e env, stderr io.Writer) client.Options {
	uid := c.uid
	if uid == "" && c.token == "" && !urlHasToken(c.server) {
		uid = e.user()
	}
	// A shell user waits for a broker that comes back: retry often.
	return client.Options{Token: c.token, UID: uid, EndGrace: 2 * time.Second, MaxBackoff: time.Second,
		Log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
}

// urlHasToken reports whether a NATS URL carries a token in its user
// part, which the client takes.
func urlHasToken(server string) bool {
	u, err := url.Parse(server)
	return err == nil && u.Scheme == "nats" && u.User != nil
}

// dial connects with opts.
func (c *conn) dial(ctx context.Context, opts client.Options) (*client.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if strings.HasPrefix(c.server, "nats://") {
		return client.DialNATS(ctx, c.server, opts)
	}
	return client.Dial(ctx, c.server, opts)
}

// fail reports err on one line and returns the exit code: 2 for a
// request the client refused to send, as bad usage.
func (c *conn) fail(stderr io.Writer, cmd string, err error) int {
	switch {
	case errors.Is(err, client.ErrInvalidRequest):
		return usageError(stderr, cmd, describe(err))
	case errors.Is(err, context.DeadlineExceeded):
		err = fmt.Errorf("no answer within %v (--timeout)", c.timeout)
	}
	return fail(stderr, cmd, err)
}

// fail reports err on one line and returns the exit code.
func fail(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "cellcast %s: %s\n", cmd, describe(err))
	return 1
}

// describe is err as one line: the broker's code and message, or the
// client's error without its "cellcast: " prefix, which the line has.
func describe(err error) string {
	if e, ok := errors.AsType[*client.Error](err); ok {
		// Some messages start with their code already.
		return e.Code + ": " + strings.TrimPrefix(e.Message, e.Code+": ")
	}
	return strings.TrimPrefix(err.Error(), "cellcast: ")
}
