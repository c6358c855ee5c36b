package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestStringNamesVersionRevisionAndGo(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"},
		{Key: "vcs.time", Value: "2026-11-27T04:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	got := fromBuildInfo(bi).String()
	if want := "v1.2.3 (revision 0123456789ab+modified, 2026-11-27T04:00:00Z) go1.26.8"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	bare := fromBuildInfo(&debug.BuildInfo{GoVersion: "go1.26.8"}).String()
	if want := "unknown go1.26.8"; bare != want {
		t.Fatalf("got %q, want %q", bare, want)
	}
}
