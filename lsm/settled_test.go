package lsm

import (
	"maps"
	"math/rand"
	"slices"
	"testing"
)

// TestSettledKeysAgainstAMap walks random components as a range visit
// does (each in key order, several fragments per key) and settles keys
// at random; has must agree with a map of everything settled so far.
// Each trial takes its set from the pool the last one released it to, so
// a set pooled again must come back holding nothing.
func TestSettledKeysAgainstAMap(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	earlier := 0 // hits on keys settled in an earlier component
	for trial := range 300 {
		s := getSettled()
		oracle := map[string]bool{}
		for range 1 + rng.Intn(8) { // components
			before := maps.Clone(oracle)
			var keys []string
			for range rng.Intn(40) {
				b := make([]byte, 1+rng.Intn(3))
				for i := range b {
					b[i] = byte('a' + rng.Intn(3))
				}
				keys = append(keys, string(b))
			}
			slices.Sort(keys)
			keys = slices.Compact(keys)
			for _, k := range keys {
				for range 1 + rng.Intn(3) { // a key's fragments
					if got, want := s.has([]byte(k)), oracle[k]; got != want {
						t.Fatalf("trial %d: has(%q) = %v, want %v", trial, k, got, want)
					}
					if oracle[k] {
						if before[k] {
							earlier++
						}
						break
					}
					if rng.Intn(3) == 0 {
						s.settle([]byte(k))
						oracle[k] = true
					}
				}
			}
			s.endComponent()
		}
		s.release()
	}
	if earlier == 0 {
		t.Fatal("no key settled in one component met in a later one: the test tells nothing")
	}
}
