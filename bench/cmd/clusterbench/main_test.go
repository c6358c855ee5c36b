package main

import "testing"

// The cluster settles on as many shards as its nodes' flags make.
func TestShardCount(t *testing.T) {
	for _, c := range []struct {
		flags []string
		want  int
	}{
		{nil, 16 + 4},
		{[]string{"--cluster-election-timeout", "4s"}, 16 + 4},
		{[]string{"--shard-depth", "3"}, 64 + 4},
		{[]string{"-shard-depth=1", "--replicas", "3"}, 4 + 4},
		{[]string{"--topic-shard-depth", "2"}, 16 + 4},
	} {
		if got := shardCount(c.flags); got != c.want {
			t.Errorf("%v: %d shards, want %d", c.flags, got, c.want)
		}
	}
}
