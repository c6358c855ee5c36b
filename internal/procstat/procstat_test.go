package procstat

import (
	"runtime"
	"testing"
)

// Touching 64 MiB must show in the resident set and its peak.
func TestRSSGrowsWithTouchedMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	before := RSSMiB()
	buf := make([]byte, 64<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	after := RSSMiB()
	if before <= 0 || after-before < 48 {
		t.Fatalf("RSS %0.f MiB before touching 64 MiB, %.0f after", before, after)
	}
	if peak := PeakRSSMiB(); peak < after {
		t.Fatalf("peak RSS %.0f MiB below current %.0f", peak, after)
	}
	runtime.KeepAlive(buf)
}
