package client

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// Publications read through the reader's memory are the publications read
// afresh, whatever was read before: the same pid with other bytes is read
// again, a copy's attributes are its own, and the memory keeps its bounds.
// The oracle is the scanner without memory.
func TestSeenPublicationsReadAsNew(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	render := func(pid int, desc string, attrs bool) []byte {
		b := fmt.Appendf(nil, `{"pid":"p%d-1.4","uid":"u","cell":"1.4","tp":"2026-11-21T10:32:12.%dZ","expires_at":"2026-11-21T10:33:12Z","desc":"%s"`, pid, pid%1000, desc)
		if attrs {
			b = append(b, `,"attrs":{"k":"v"}`...)
		}
		return append(b, '}')
	}
	seen := &seenPubs{}
	hits := 0
	for i := range 20000 {
		pid := rng.IntN(6000)
		desc := "incident"
		if rng.IntN(10) == 0 {
			desc = "changed" // the same pid, other bytes
		}
		if rng.IntN(50) == 0 {
			desc = strings.Repeat("x", seenMaxRaw) // too large to keep
		}
		raw := render(pid, desc, pid%2 == 0)
		list := append(append([]byte("["), raw...), ']')
		var want, got []Publication
		var ok bool
		fresh := scanner{b: list}
		if want, ok = fresh.publications(); !ok {
			t.Fatalf("unreadable %s", raw)
		}
		if _, hit := seen.lookup(raw, &Publication{}); hit {
			hits++
		}
		withMemory := scanner{b: list, seen: seen}
		if got, ok = withMemory.publications(); !ok || !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d: read %+v, want %+v", i, got, want)
		}
		if got[0].Attrs != nil {
			got[0].Attrs["k"] = "changed by its reader"
		}
		if len(seen.m) > seenEntries || len(seen.order) > seenEntries {
			t.Fatalf("%d entries", len(seen.m))
		}
	}
	if hits < 5000 {
		t.Fatalf("%d hits in 20000 reads of 6000 publications", hits)
	}
}
