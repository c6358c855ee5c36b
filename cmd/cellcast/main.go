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
//
// Every flag can also be set by a CELLCAST_* environment variable
// (--server: CELLCAST_SERVER). Against a broker in open mode the uid is
// the OS user's name unless --uid says otherwise.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"os/user"
	"strings"
	"syscall"
	"time"

	"github.com/seed84792017/cellcast/client"
	"github.com/seed84792017/cellcast/internal/flagenv"
)

const usage = `Usage: cellcast COMMAND [flags]

Commands:
  sub     subscribe: print past results, then live notifications until the window ends or ^C
  pub     publish
  query   the latest publications by publisher, attribute or time (--attr),
          or that meet a place (--near LAT,LNG,RADIUS or --within FILE.geojson)
  token   mint an HS256 bearer token from the broker's secret

Places are anywhere on Earth: --lat/--lng (a point), with --radius (a circle),
or --polygon FILE (GeoJSON). Cells are S2 cells as Dewey ids (5.2.1: face 4,
then child positions, each plus one).

cellcast COMMAND --help lists a command's flags.
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
		"sub": sub, "pub": pub, "query": query, "token": token,
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
			fmt.Fprint(stdout, usage)
			return 0
		}
		fmt.Fprintf(stderr, "cellcast: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	return cmd(ctx, args[1:], e, stdout, stderr)
}

// conn holds the flags every command that talks to a broker has.
type conn struct {
	server, token, uid string
	json               bool
	timeout            time.Duration
}

func (c *conn) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.server, "server", "ws://127.0.0.1:8080/ws", "the broker: a WebSocket URL (ws://, wss://) or a NATS one (nats://)")
	fs.StringVar(&c.token, "token", "", "bearer token (mint one with cellcast token)")
	fs.StringVar(&c.uid, "uid", "", "the user to act as when the broker runs open (default: the OS user; under auth the token's)")
	fs.BoolVar(&c.json, "json", false, "print JSON objects, one per line")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "how long to wait for a reply")
}

// parse parses a command's flags; ok false means stop with code.
func parse(fs *flag.FlagSet, args []string, e env, stderr io.Writer) (code int, ok bool) {
	fs.SetOutput(stderr)
	err := flagenv.Parse(fs, args, e.lookup, fmt.Sprintf("Usage: cellcast %s [flags]\n", fs.Name()))
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		return 0, false
	}
	fmt.Fprintf(stderr, "cellcast %s: %v\n", fs.Name(), err)
	return 2, false
}

// dial connects; the uid defaults to the OS user's when there is no token.
func (c *conn) dial(ctx context.Context, e env, stderr io.Writer) (*client.Client, error) {
	uid := c.uid
	if uid == "" && c.token == "" {
		uid = e.user()
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	opts := client.Options{Token: c.token, UID: uid, EndGrace: 2 * time.Second,
		Log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if strings.HasPrefix(c.server, "nats://") {
		return client.DialNATS(ctx, c.server, opts)
	}
	return client.Dial(ctx, c.server, opts)
}

// fail reports err and returns the exit code.
func fail(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "cellcast %s: %v\n", cmd, err)
	return 1
}
