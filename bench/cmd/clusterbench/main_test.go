package main

import (
	"slices"
	"testing"
)

// The cluster settles on as many shards as its nodes' flags make.
func TestShardCount(t *testing.T) {
	for _, c := range []struct {
		flags []string
		want  int
	}{
		{nil, 1 + 16 + 4},
		{[]string{"--cluster-election-timeout", "4s"}, 1 + 16 + 4},
		{[]string{"--shard-groups", "3"}, 1 + 3 + 4},
		{[]string{"-shard-groups=8", "--replicas", "3"}, 1 + 8 + 4},
		{[]string{"--shard-depth", "12"}, 1 + 16 + 4},
	} {
		if got := shardCount(c.flags); got != c.want {
			t.Errorf("%v: %d shards, want %d", c.flags, got, c.want)
		}
	}
}

// The median of an odd count is its middle, of an even one the mean of
// the two middle values.
func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{2.1}, 2.1},
		{[]float64{2.3, 1.7, 1.9}, 1.9},
		{[]float64{2.0, 1.0, 4.0, 3.0}, 2.5},
	} {
		if got := median(slices.Clone(c.xs)); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}
