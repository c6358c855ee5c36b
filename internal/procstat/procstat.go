package procstat

import (
	"os"
	"strconv"
	"strings"
)

// RSSMiB is the resident set size of this process in MiB, or -1 where
// /proc is not available.
func RSSMiB() float64 { return field("self", "VmRSS:") }

// PeakRSSMiB is the largest resident set size this process has had, in
// MiB, or -1 where /proc is not available.
func PeakRSSMiB() float64 { return field("self", "VmHWM:") }

// ProcessRSSMiB and ProcessPeakRSSMiB are the same for another process.
func ProcessRSSMiB(pid int) float64 { return field(strconv.Itoa(pid), "VmRSS:") }

func ProcessPeakRSSMiB(pid int) float64 { return field(strconv.Itoa(pid), "VmHWM:") }

func field(proc, name string) float64 {
	b, err := os.ReadFile("/proc/" + proc + "/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == name {
			kb, err := strconv.Atoi(f[1])
			if err != nil {
				return -1
			}
			return float64(kb) / 1024
		}
	}
	return -1
}
