package flagenv

import (
	"flag"
	"fmt"
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
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\nEvery flag can also be set by the environment variable shown.\n\n", usage)
		fs.VisitAll(func(f *flag.Flag) {
			name, help := flag.UnquoteUsage(f)
			fmt.Fprintf(fs.Output(), "  --%s %s   (%s)\n    \t%s", f.Name, name, Name(f.Name), strings.ReplaceAll(help, "\n", "\n    \t"))
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
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if v, ok := lookup(Name(f.Name)); ok && !set[f.Name] && err == nil {
			if e := f.Value.Set(v); e != nil {
				err = fmt.Errorf("%s=%q: %w", Name(f.Name), v, e)
			}
		}
	})
	return err
}
