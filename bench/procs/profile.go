package procs

import (
	"os"
	"runtime/pprof"
)

// ProfileCPU writes this process's CPU profile to path until the
// returned stop is called: a load generator shares the machine with the
// broker it measures, so its own cost is part of the picture.
func ProfileCPU(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
