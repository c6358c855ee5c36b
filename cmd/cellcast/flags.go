package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/seed84792017/cellcast/internal/flagenv"
)

// connFlags are the flags of conn: they mean the same in every command
// that talks to a broker.
var connFlags = map[string]bool{"server": true, "token": true, "uid": true, "json": true, "timeout": true}

// envName is the environment variable of a command's flag. The
// connection flags share CELLCAST_<FLAG> (CELLCAST_SERVER), and the auth
// flags of token and backup's --metrics-token share the broker's
// (CELLCAST_AUTH_HMAC_SECRET_FILE, CELLCAST_METRICS_TOKEN); a
// command's other flags are CELLCAST_<COMMAND>_<FLAG>, so that no
// variable means two things: CELLCAST_PUB_ATTR is a key=value,
// CELLCAST_QUERY_ATTR an attribute's name, CELLCAST_TOKEN_UID the user a
// token is minted for and CELLCAST_UID the user to act as.
func envName(cmd, name string) string {
	if (connFlags[name] && cmd != "token") || strings.HasPrefix(name, "auth-") || name == "metrics-token" {
		return flagenv.Name(name)
	}
	return flagenv.Name(cmd + "-" + name)
}

// parse parses a command's flags, each falling back to its variable
// (envName); ok false means stop with code: 0 after --help (on stdout:
// it was asked for), 2 on bad usage.
func parse(fs *flag.FlagSet, args []string, e env, stdout, stderr io.Writer) (code int, ok bool) {
	cmd := fs.Name()
	// flagenv asks for its own name of each flag's variable.
	ours := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) { ours[flagenv.Name(f.Name)] = envName(cmd, f.Name) })
	lookup := func(k string) (string, bool) {
		if n, ok := ours[k]; ok {
			return e.lookup(n)
		}
		return "", false
	}
	// flagenv's help and the flag package's messages would name
	// flagenv's variables and repeat the error: help prints ours.
	fs.SetOutput(io.Discard)
	err := flagenv.Parse(fs, args, lookup, "")
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		help(fs, stdout)
		return 0, false
	}
	msg := err.Error()
	for theirs, n := range ours {
		if strings.HasPrefix(msg, theirs+"=") { // a bad value of a variable
			msg = n + strings.TrimPrefix(msg, theirs)
			break
		}
	}
	return usageError(stderr, cmd, msg), false
}

// usageError reports bad usage on one line and returns its exit code.
func usageError(stderr io.Writer, cmd, msg string) int {
	fmt.Fprintf(stderr, "cellcast %s: %s\n", cmd, msg)
	return 2
}

// help lists a command's flags with their variables.
func help(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, "Usage: cellcast %s [flags]\n\nEvery flag can also be set by the environment variable shown.\n\n", fs.Name())
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  --%s %s   (%s)\n    \t%s", f.Name, name, envName(fs.Name(), f.Name), strings.ReplaceAll(usage, "\n", "\n    \t"))
		switch f.DefValue {
		case "", "false", "0", "0s", "NaN", "[]", "map[]": // no default worth saying
		default:
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}

// negative refuses a negative duration flag: the broker refuses one too,
// and it is no way to say "none" (0 is).
func negative(name string, d time.Duration, zero string) error {
	if d < 0 {
		return fmt.Errorf("--%s %v: cannot be negative (0: %s)", name, d, zero)
	}
	return nil
}

// firstError is the first of errs that is not nil: a usage error is one
// line.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
