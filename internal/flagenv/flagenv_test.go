package flagenv

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestFlagBeatsEnvironmentBeatsDefault(t *testing.T) {
	env := map[string]string{"CELLCAST_NATS_URL": "nats://env", "CELLCAST_RATE": "7", "CELLCAST_DATA": "env-dir"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	url := fs.String("nats-url", "", "")
	rate := fs.Int("rate", 1, "")
	data := fs.String("data", "./data", "")
	other := fs.String("other", "default", "")
	if err := Parse(fs, []string{"--data", "flag-dir"}, lookup, "usage"); err != nil {
		t.Fatal(err)
	}
	if *url != "nats://env" || *rate != 7 || *data != "flag-dir" || *other != "default" {
		t.Fatalf("got %q %d %q %q", *url, *rate, *data, *other)
	}
	env["CELLCAST_RATE"] = "x"
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Int("rate", 1, "")
	if err := Parse(fs, nil, lookup, "usage"); err == nil {
		t.Fatal("a bad variable passed")
	}
	if err := Parse(flag.NewFlagSet("t", flag.ContinueOnError), []string{"extra"}, lookup, "usage"); err == nil {
		t.Fatal("an argument passed")
	}
}

// configFlags are a few flags of each kind, parsed with a config file.
type configFlags struct {
	fs                 *flag.FlagSet
	url, data, cfgPath *string
	rate               *float64
	conns              *int
	grace              *time.Duration
	pprof, version     *bool
}

func newConfigFlags() *configFlags {
	c := &configFlags{fs: flag.NewFlagSet("t", flag.ContinueOnError)}
	c.fs.SetOutput(io.Discard)
	c.url = c.fs.String("nats-url", "", "")
	c.data = c.fs.String("data", "./data", "")
	c.cfgPath = c.fs.String("config", "", "")
	c.rate = c.fs.Float64("rate", 2000, "")
	c.conns = c.fs.Int("max-conns", 0, "")
	c.grace = c.fs.Duration("shutdown-timeout", 30*time.Second, "")
	c.pprof = c.fs.Bool("pprof", false, "")
	c.version = c.fs.Bool("version", false, "")
	return c
}

// parseConfig parses args with env as the environment and file as the
// contents of "broker.toml".
func (c *configFlags) parse(args []string, env map[string]string, file string) error {
	return ParseWith(c.fs, args, Options{
		Lookup:          func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Config:          "config",
		CommandLineOnly: []string{"version"},
		ReadFile: func(path string) ([]byte, error) {
			if path != "broker.toml" {
				return nil, fmt.Errorf("no file %s", path)
			}
			return []byte(file), nil
		},
	})
}

func TestFlagBeatsEnvironmentBeatsConfigBeatsDefault(t *testing.T) {
	file := `
nats-url = "nats://file"
data = "file-dir"
rate = 100000          # an integer for a float flag
max-conns = 500
shutdown-timeout = "2m"
pprof = true
`
	c := newConfigFlags()
	env := map[string]string{"CELLCAST_CONFIG": "broker.toml", "CELLCAST_NATS_URL": "nats://env", "CELLCAST_MAX_CONNS": "7"}
	if err := c.parse([]string{"--data", "flag-dir", "--max-conns", "9"}, env, file); err != nil {
		t.Fatal(err)
	}
	// data and max-conns: the flag; nats-url: the variable; the rest: the file.
	if *c.data != "flag-dir" || *c.conns != 9 || *c.url != "nats://env" || *c.rate != 100000 || *c.grace != 2*time.Minute || !*c.pprof {
		t.Fatalf("got data %q, max-conns %d, nats-url %q, rate %v, shutdown-timeout %v, pprof %v", *c.data, *c.conns, *c.url, *c.rate, *c.grace, *c.pprof)
	}
	// Without a config file the defaults stay.
	c = newConfigFlags()
	if err := c.parse(nil, nil, file); err != nil {
		t.Fatal(err)
	}
	if *c.data != "./data" || *c.rate != 2000 {
		t.Fatalf("no --config, yet data %q rate %v", *c.data, *c.rate)
	}
	// --config on the command line beats CELLCAST_CONFIG.
	c = newConfigFlags()
	if err := c.parse([]string{"--config", "broker.toml"}, map[string]string{"CELLCAST_CONFIG": "elsewhere.toml"}, file); err != nil {
		t.Fatal(err)
	}
	if *c.data != "file-dir" || *c.rate != 100000 {
		t.Fatalf("--config broker.toml: data %q rate %v", *c.data, *c.rate)
	}
}

func TestConfigUnknownKeyNamesKeyAndLine(t *testing.T) {
	for _, tc := range []struct {
		file, key string
		line      int
		hint      string
	}{
		{"data = \"d\"\n\n# a comment\nnats-ur = \"nats://x\"\n", "nats-ur", 4, "no flag --nats-ur"},
		{"rate = 1\nnats_url = \"nats://x\"\n", "nats_url", 2, "nats-url"},
		{"data = \"d\"\n[server]\nhttp = \"x\"\n", "server", 2, "no flag --server"},
		{"data = \"d\"\n\nserver.http = \"x\"\n", "server", 3, "no flag --server"},
		{"config = \"other.toml\"\n", "config", 1, "command line only"},
		{"version = true\n", "version", 1, "command line only"},
	} {
		c := newConfigFlags()
		err := c.parse([]string{"--config", "broker.toml"}, nil, tc.file)
		var ce *ConfigError
		if !errors.As(err, &ce) || !errors.Is(err, ErrUnknownKey) {
			t.Fatalf("%q: got %v, want an unknown key", tc.file, err)
		}
		if ce.Key != tc.key || ce.Line != tc.line || ce.File != "broker.toml" {
			t.Fatalf("%q: key %q line %d file %q, want %q line %d", tc.file, ce.Key, ce.Line, ce.File, tc.key, tc.line)
		}
		for _, want := range []string{"broker.toml", fmt.Sprintf("line %d", tc.line), strconv.Quote(tc.key), tc.hint} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("%q: %q does not say %q", tc.file, err, want)
			}
		}
	}
}

func TestConfigWrongTypeNamesKey(t *testing.T) {
	for _, tc := range []struct {
		file, key string
		line      int
		wrongType bool
	}{
		{"max-conns = \"10\"\n", "max-conns", 1, true},
		{"data = \"d\"\nrate = \"fast\"\n", "rate", 2, true},
		{"pprof = 1\n", "pprof", 1, true},
		{"data = 5\n", "data", 1, true},
		{"max-conns = 1.5\n", "max-conns", 1, true},
		{"shutdown-timeout = 30\n", "shutdown-timeout", 1, true},
		{"nats-url = [\"a\"]\n", "nats-url", 1, true},
		{"shutdown-timeout = \"soon\"\n", "shutdown-timeout", 1, false}, // the right type, a bad value
	} {
		c := newConfigFlags()
		err := c.parse([]string{"--config", "broker.toml"}, nil, tc.file)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != tc.key || ce.Line != tc.line || errors.Is(err, ErrWrongType) != tc.wrongType {
			t.Fatalf("%q: got %v (%#v), want key %q at line %d, wrong type %v", tc.file, err, ce, tc.key, tc.line, tc.wrongType)
		}
		if !strings.Contains(err.Error(), strconv.Quote(tc.key)) {
			t.Fatalf("%q: %q does not name the key", tc.file, err)
		}
	}
	// A value the command line overrides is still checked: the file is wrong.
	c := newConfigFlags()
	if err := c.parse([]string{"--config", "broker.toml", "--max-conns", "3"}, nil, "max-conns = \"10\"\n"); !errors.Is(err, ErrWrongType) {
		t.Fatalf("got %v, want a wrong type", err)
	}
}

func TestConfigFileErrors(t *testing.T) {
	c := newConfigFlags()
	err := c.parse([]string{"--config", "broker.toml"}, nil, "data = \"d\"\nrate = = 3\n")
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Line != 2 {
		t.Fatalf("a syntax error: got %v", err)
	}
	c = newConfigFlags()
	if err := c.parse([]string{"--config", "missing.toml"}, nil, ""); !errors.As(err, &ce) || ce.File != "missing.toml" {
		t.Fatalf("a missing file: got %v", err)
	}
}

func TestCommandLineOnlyTakesNoVariable(t *testing.T) {
	c := newConfigFlags()
	if err := c.parse(nil, map[string]string{"CELLCAST_VERSION": "1.2.3"}, ""); err != nil || *c.version {
		t.Fatalf("CELLCAST_VERSION was read: %v, version %v", err, *c.version)
	}
	var help strings.Builder
	c = newConfigFlags()
	c.fs.SetOutput(&help)
	if err := c.parse([]string{"--help"}, nil, ""); err != flag.ErrHelp {
		t.Fatal(err)
	}
	if !strings.Contains(help.String(), "--config") || !strings.Contains(help.String(), "CELLCAST_CONFIG") || strings.Contains(help.String(), "CELLCAST_VERSION") {
		t.Fatalf("help:\n%s", help.String())
	}
}
