package buildinfo

import (
	"fmt"
	"runtime/debug"
)

// Info is what the Go toolchain recorded about this binary.
type Info struct {
	Version   string // module version: "(devel)" for a build from a work tree
	Revision  string // VCS revision, "" when built without VCS information
	Time      string // commit time (RFC 3339), "" when unknown
	Modified  bool   // the work tree had uncommitted changes
	GoVersion string
}

// Read returns this binary's build information; fields the toolchain did
// not record are empty.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "unknown"}
	}
	return fromBuildInfo(bi)
}

func fromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{Version: bi.Main.Version, GoVersion: bi.GoVersion}
	if in.Version == "" {
		in.Version = "unknown"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// String is the line `--version` prints, e.g.
// "cellcast v0.3.0 (revision 1a2b3c4d5e6f, 2026-11-27T04:00:00Z) go1.26.8".
func (in Info) String() string {
	s := in.Version
	if in.Revision != "" {
		rev := in.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if in.Modified {
			rev += "+modified"
		}
		s += " (revision " + rev
		if in.Time != "" {
			s += ", " + in.Time
		}
		s += ")"
	}
	return fmt.Sprintf("%s %s", s, in.GoVersion)
}
