package cluster

import (
	"fmt"
	"slices"
	"strings"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/subscriptions"
)

// TopicShards is how many shards the topic namespace is split into. A
// topic at or below the topic depth lives in the shard its first
// TopicDepth components hash to; one above it (a shallow topic) in the
// shard its own components hash to, as the first shard "under" it. At
// topic depth 1 a topic publication therefore goes to one shard, the one
// of its top-level topic. Deeper, a busy top-level topic spreads over the
// shards by its subtopics, and a publication to a shallow topic goes to
// every topic shard (its descendants may live in any).
const TopicShards = 4

// Shards splits the geo Dewey space into the subtrees at Depth: shard
// "g14" holds the cells under 1.4. A quad tree numbers children 1–4; a
// raw cell id with larger components folds them onto 1–4, so every cell
// has a shard and overlap between cells carries over to their shards.
//
// Exactly one shard matches each (publication, subscription) pair:
//
//   - A subscription lives in one shard, its home: the shard of its cell,
//     or for a cell above the shard depth the first shard under it.
//   - A publication is stored in every shard holding a subscription it
//     can overlap: the shards under its cell, and the homes of its
//     ancestors above the shard depth.
//
// A subscription thus gets all its notifications from one shard, in that
// shard's stamp order, so sequence numbers and resume mean what they mean
// on one node.
type Shards struct {
	Depth      int // 1–4; 4^Depth geo shards
	TopicDepth int // 1–4 (0 means 1): how many components of a topic place it
}

// String names the layout; every node of a cluster must use the same.
func (m Shards) String() string {
	return fmt.Sprintf("geo depth %d, topic depth %d, %d topic shards", m.Depth, m.topicDepth(), TopicShards)
}

func (m Shards) topicDepth() int { return max(m.TopicDepth, 1) }

// All lists every shard, geo shards in order and then the topic shards.
func (m Shards) All() []string {
	names := []string{""}
	for range m.Depth {
		var next []string
		for _, n := range names {
			for c := '1'; c <= '4'; c++ {
				next = append(next, n+string(c))
			}
		}
		names = next
	}
	for i := range names {
		names[i] = "g" + names[i]
	}
	for k := range TopicShards {
		names = append(names, fmt.Sprintf("t%d", k+1))
	}
	return names
}

// IsTopic reports whether a shard holds topics.
func IsTopic(shard string) bool { return strings.HasPrefix(shard, "t") }

// topicShard is the shard of the topic path id: its components folded
// together (at topic depth 1, its top-level topic's number).
func topicShard(id dewey.ID) string {
	var h uint64
	for _, x := range id {
		h = h*31 + uint64(x)
	}
	return fmt.Sprintf("t%d", h%TopicShards+1)
}

// topicHome is the shard a subscription to topic cell c lives in.
func (m Shards) topicHome(c subscriptions.Cell) string {
	return topicShard(c.ID[:min(len(c.ID), m.topicDepth())])
}

// topicTargets are the shards a publication to topic cell c is stored in.
func (m Shards) topicTargets(c subscriptions.Cell) []string {
	out := []string{m.topicHome(c)}
	add := func(s string) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(c.ID) < m.topicDepth() { // a shallow topic: descendants anywhere
		for k := range TopicShards {
			add(fmt.Sprintf("t%d", k+1))
		}
		return out
	}
	for k := 1; k < m.topicDepth(); k++ { // subscriptions to shallow ancestors
		add(topicShard(c.ID[:k]))
	}
	return out
}

// Validate checks the depths.
func (m Shards) Validate() error {
	if m.Depth < 1 || m.Depth > 4 {
		return fmt.Errorf("cluster: shard depth %d: use 1 to 4 (4 to 256 geo shards)", m.Depth)
	}
	if m.TopicDepth < 0 || m.TopicDepth > 4 {
		return fmt.Errorf("cluster: topic shard depth %d: use 1 to 4", m.TopicDepth)
	}
	return nil
}

// digits folds the first n components of c onto 1–4.
func digits(c subscriptions.Cell, n int) string {
	var b strings.Builder
	for _, x := range c.ID[:min(n, len(c.ID))] {
		b.WriteByte(byte('1' + (int(x)-1)%4))
	}
	return b.String()
}

// Home is the shard a subscription at c lives in.
func (m Shards) Home(c subscriptions.Cell) string {
	if c.NS != subscriptions.NSCell {
		return m.topicHome(c)
	}
	d := digits(c, m.Depth)
	return "g" + d + strings.Repeat("1", m.Depth-len(d))
}

// Targets are the shards a publication at c is stored in: Home(c) first
// (its answer is the one the publisher gets), then the others.
func (m Shards) Targets(c subscriptions.Cell) []string {
	if c.NS != subscriptions.NSCell {
		return m.topicTargets(c)
	}
	home := m.Home(c)
	out := []string{home}
	seen := map[string]bool{home: true}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	d := digits(c, m.Depth)
	// Subscriptions at ancestors above the shard depth live in their homes.
	for k := 1; k < len(d); k++ {
		add("g" + d[:k] + strings.Repeat("1", m.Depth-k))
	}
	// Subscriptions below c (or at c) live in the shards under it.
	for _, s := range m.All() {
		if !IsTopic(s) && strings.HasPrefix(s[1:], d) {
			add(s)
		}
	}
	return out
}
