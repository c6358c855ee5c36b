package flagenv

import (
	"flag"
	"fmt"
	"slices"
	"strings"
)

// Name is the environment variable of a flag: --nats-url → CELLCAST_NATS_URL.
func Name(flagName string) string {
	return "CELLCAST_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Parse reads flags, taking each one not given on the command line from
// its environment variable through lookup (os.LookupEnv). usage heads the
// help text.
func Parse(fs *flag.FlagSet, args []string, lookup func(string) (string, bool), usage string) error {
	return ParseWith(fs, args, Options{Lookup: lookup, Usage: usage})
}

// Options say where ParseWith looks for the flags not given on the
// command line.
type Options struct {
	// Lookup reads an environment variable (os.LookupEnv); nil reads none.
	Lookup func(string) (string, bool)
	// Usage heads the help text.
	Usage string
	// Config names the flag (e.g. "config") whose value, from the command
	// line or its variable, is the path of a TOML file of flag = value
	// lines; empty: no config file.
	Config string
	// CommandLineOnly are flags read from the command line alone, with no
	// variable or key: --version, say, where a stray CELLCAST_VERSION in
	// the environment would otherwise stop every start.
	CommandLineOnly []string
	// ReadFile reads the config file; nil is os.ReadFile.
	ReadFile func(string) ([]byte, error)
	// Env names a flag's variable; nil is Name. A subcommand whose flag
	// means something else than the main command's same-named one gives
	// it a variable of its own.
	Env func(flagName string) string
}

// ParseWith reads flags; each one not given on the command line comes
// from its environment variable, else from the config file, else keeps
// its default.
func ParseWith(fs *flag.FlagSet, args []string, o Options) error {
	env := o.Env
	if env == nil {
		env = Name
	}
	cmdOnly := func(name string) bool { return slices.Contains(o.CommandLineOnly, name) }
	fs.Usage = func() {
		also := "Every flag can also be set by the environment variable shown."
		if o.Config != "" {
			also = "Every flag can also be set by the environment variable shown, or as a key of the\n--" + o.Config + " file (TOML, flag-name = value); the command line wins over the environment,\nthe environment over the file."
		}
		fmt.Fprintf(fs.Output(), "%s\n%s\n\n", o.Usage, also)
		fs.VisitAll(func(f *flag.Flag) {
			name, help := flag.UnquoteUsage(f)
			fmt.Fprintf(fs.Output(), "  --%s %s", f.Name, name)
			if !cmdOnly(f.Name) {
				fmt.Fprintf(fs.Output(), "   (%s)", env(f.Name))
			}
			fmt.Fprintf(fs.Output(), "\n    \t%s", strings.ReplaceAll(help, "\n", "\n    \t"))
			switch f.DefValue {
			case "", "false", "0", "0s", "NaN", "[]", "map[]": // no default worth saying
			default:
				fmt.Fprintf(fs.Output(), " (default %s)", f.DefValue)
			}
			fmt.Fprintln(fs.Output())
		})
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{} // by the command line or the environment
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || cmdOnly(f.Name) || err != nil || o.Lookup == nil {
			return
		}
		if v, ok := o.Lookup(env(f.Name)); ok {
			if e := f.Value.Set(v); e != nil {
				err = fmt.Errorf("%s=%q: %w", env(f.Name), v, e)
			}
			set[f.Name] = true
		}
	})
	if err != nil || o.Config == "" {
		return err
	}
	cf := fs.Lookup(o.Config)
	if cf == nil {
		return fmt.Errorf("flagenv: no flag --%s for the config file", o.Config)
	}
	if path := cf.Value.String(); path != "" {
		return applyFile(fs, path, set, o)
	}
	return nil
}
