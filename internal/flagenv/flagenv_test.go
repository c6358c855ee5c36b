package flagenv

import (
	"flag"
	"io"
	"testing"
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
