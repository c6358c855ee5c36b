package cluster

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/subscriptions"
)

// Shards splits the geo Dewey space over a fixed number of shards. The
// cells of the world grid are far too many and too uneven to be shards
// themselves (one depth-2 subtree holds all of New York), so the subtrees
// at Depth are hashed onto Groups shards ("g1" … "gN"): a city's
// subtrees, a few kilometres across at the default depth, spread over
// them all. A record whose cells do not all lie in one shard's subtrees
// (a circle or polygon across a subtree border, or a cell above Depth)
// lives in the overflow shard "g0" instead.
//
// Exactly one shard matches each (publication, subscription) pair:
//
//   - A subscription lives in one shard, its home: the shard of its
//     cells' subtrees when they all hash to one, else g0.
//   - A publication is stored in every shard that can hold a
//     subscription it overlaps: the shards of its cells' subtrees (for a
//     cell above Depth, of every subtree below it), and g0.
//
// A subscription thus gets all its notifications from one shard, in that
// shard's stamp order, so sequence numbers and resume mean what they mean
// on one node. Every publication costs a second append (in g0), as a
// shallow cell's did in the quad tree's layout; what g0 delivers is what
// its subscriptions are owed.
type Shards struct {
	Depth      int // 2–31 components (0 means DefaultShardDepth): the subtrees hashed onto shards
	Groups     int // 1–256 geo shards besides g0 (0 means DefaultShardGroups)
	TopicDepth int // 1–4 (0 means 1): how many components of a topic place it
	// TopicGroups is how many shards the topic namespace is split into,
	// 1–256 (0 means DefaultTopicGroups). A topic at or below TopicDepth
	// lives in the shard its first TopicDepth components hash to; one
	// above it (a shallow topic) in the shard its own components hash to,
	// as the first shard "under" it. At topic depth 1 a topic publication
	// therefore goes to one shard, the one of its top-level topic. Deeper,
	// a busy top-level topic spreads over the topic shards by its
	// subtopics, and a publication to a shallow topic goes to every topic
	// shard (its descendants may live in any).
	TopicGroups int
	// TopicSpread places topic subscriptions by their user instead: each
	// lives in the topic shard its uid hashes to, and every topic
	// publication is stored in every topic shard. A busy topic, its
	// top-level topic's own subscribers included, then spreads over the
	// topic shards and the nodes owning them, for one append per topic
	// shard per publication; and a user's topic subscriptions share one
	// store, so a self-join there needs nothing from the other shards.
	TopicSpread bool
}

// Defaults of the layout: S2 level 10 (cells of 7–10 km, a few dozen to
// a large city: New York's busiest is a quarter of its moving users) over
// 16 shards.
const (
	DefaultShardDepth  = 11
	DefaultShardGroups = 16
	DefaultTopicGroups = 4
)

// Overflow is the shard of the records that no one other shard holds.
const Overflow = "g0"

// String names the layout; every node of a cluster must use the same.
func (m Shards) String() string {
	s := fmt.Sprintf("geo depth %d hashed onto %d shards and an overflow, topic depth %d, %d topic shards", m.depth(), m.groups(), m.topicDepth(), m.topicGroups())
	if m.TopicSpread {
		s += " spread by user"
	}
	return s
}

func (m Shards) depth() int {
	if m.Depth == 0 {
		return DefaultShardDepth
	}
	return m.Depth
}

func (m Shards) groups() int {
	if m.Groups == 0 {
		return DefaultShardGroups
	}
	return m.Groups
}

func (m Shards) topicDepth() int { return max(m.TopicDepth, 1) }

func (m Shards) topicGroups() int {
	if m.TopicGroups == 0 {
		return DefaultTopicGroups
	}
	return m.TopicGroups
}

// All lists every shard: g0, the geo shards in order, the topic shards.
func (m Shards) All() []string {
	names := []string{Overflow}
	for g := range m.groups() {
		names = append(names, fmt.Sprintf("g%d", g+1))
	}
	for k := range m.topicGroups() {
		names = append(names, fmt.Sprintf("t%d", k+1))
	}
	return names
}

// Balanced lists the groups of shards the nodes share out each on its
// own: the geo shards, which carry a city's load, and the rest (g0, which
// every publication reaches but few subscriptions live in, and the topic
// shards, idle under a geo load), so that no node's fair number of shards
// is made up of idle ones.
func (m Shards) Balanced() [][]string {
	all := m.All()
	return [][]string{all[1 : 1+m.groups()], append([]string{Overflow}, all[1+m.groups():]...)}
}

// Fair reports whether nodes that own the shards owned[i] hold no more
// than their share of each group of Balanced (rounded up), as the lease
// loop balances them.
func (m Shards) Fair(owned [][]string) bool {
	for _, g := range m.Balanced() {
		share := (len(g) + len(owned) - 1) / max(len(owned), 1)
		for _, o := range owned {
			k := 0
			for _, s := range o {
				if slices.Contains(g, s) {
					k++
				}
			}
			if k > share {
				return false
			}
		}
	}
	return true
}

// Share is the most shards one of nodes holds once they are balanced:
// its share of each group of Balanced, rounded up.
func (m Shards) Share(nodes int) int {
	n := 0
	for _, g := range m.Balanced() {
		n += (len(g) + nodes - 1) / max(nodes, 1)
	}
	return n
}

// IsTopic reports whether a shard holds topics.
func IsTopic(shard string) bool { return strings.HasPrefix(shard, "t") }

// topicShard is the shard of the topic path id: its components folded
// together (at topic depth 1, its top-level topic's number).
func (m Shards) topicShard(id dewey.ID) string {
	var h uint64
	for _, x := range id {
		h = h*31 + uint64(x)
	}
	return fmt.Sprintf("t%d", h%uint64(m.topicGroups())+1)
}

// topicHome is the shard a subscription to topic cell c lives in.
func (m Shards) topicHome(c subscriptions.Cell) string {
	return m.topicShard(c.ID[:min(len(c.ID), m.topicDepth())])
}

// userShard is the topic shard of uid's subscriptions under TopicSpread:
// its name hashed (FNV-1a, stable across releases).
func (m Shards) userShard(uid string) string {
	h := fnv.New64a()
	h.Write([]byte(uid))
	return fmt.Sprintf("t%d", h.Sum64()%uint64(m.topicGroups())+1)
}

// topicTargets are the shards a publication to topic cell c is stored in,
// the shard of its own path first.
func (m Shards) topicTargets(c subscriptions.Cell) []string {
	out := []string{m.topicHome(c)}
	add := func(s string) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if m.TopicSpread || len(c.ID) < m.topicDepth() { // subscribers, or descendants, anywhere
		for k := range m.topicGroups() {
			add(fmt.Sprintf("t%d", k+1))
		}
		return out
	}
	for k := 1; k < m.topicDepth(); k++ { // subscriptions to shallow ancestors
		add(m.topicShard(c.ID[:k]))
	}
	return out
}

// Validate checks the depths.
func (m Shards) Validate() error {
	if m.Depth != 0 && (m.Depth < 2 || m.Depth > 31) {
		return fmt.Errorf("cluster: shard depth %d: use 2 to 31 (Dewey components: S2 level + 1)", m.Depth)
	}
	if m.Groups < 0 || m.Groups > 256 {
		return fmt.Errorf("cluster: %d shard groups: use 1 to 256", m.Groups)
	}
	if m.TopicDepth < 0 || m.TopicDepth > 4 {
		return fmt.Errorf("cluster: topic shard depth %d: use 1 to 4", m.TopicDepth)
	}
	if m.TopicGroups < 0 || m.TopicGroups > 256 {
		return fmt.Errorf("cluster: %d topic shards: use 1 to 256", m.TopicGroups)
	}
	return nil
}

// group is the geo shard of the subtree at Depth holding c (c at Depth or
// deeper): its encoded prefix hashed (FNV-1a, stable across releases,
// since every node and every restart must agree).
func (m Shards) group(c subscriptions.Cell) string {
	h := fnv.New64a()
	h.Write(c.ID[:m.depth()].AppendEncoded(nil))
	return fmt.Sprintf("g%d", h.Sum64()%uint64(m.groups())+1)
}

// SubHome is the shard a subscription of uid on cells lives in: by its
// user for a topic under TopicSpread, else SelfJoinHome for a self-join
// and Home for the rest.
func (m Shards) SubHome(cells []subscriptions.Cell, uid string, selfJoin bool) string {
	switch {
	case cells[0].NS != subscriptions.NSCell && m.TopicSpread:
		return m.userShard(uid)
	case selfJoin:
		return m.SelfJoinHome(cells)
	}
	return m.Home(cells)
}

// PriorShards are the shards besides home, a self-join's, that may hold
// its user's plain subscriptions on cells overlapping cells: every shard
// a publication on cells reaches, but none for a topic under TopicSpread,
// where all of a user's topic subscriptions live in home.
func (m Shards) PriorShards(cells []subscriptions.Cell, home string) []string {
	if cells[0].NS != subscriptions.NSCell && m.TopicSpread {
		return nil
	}
	return slices.DeleteFunc(m.Targets(cells), func(s string) bool { return s == home })
}

// Home is the shard a subscription on cells lives in (its cover, or its
// one cell), placed by its cells.
func (m Shards) Home(cells []subscriptions.Cell) string {
	if cells[0].NS != subscriptions.NSCell {
		return m.topicHome(cells[0])
	}
	home := ""
	for _, c := range cells {
		if c.NS != subscriptions.NSCell || len(c.ID) < m.depth() {
			return Overflow
		}
		if g := m.group(c); home == "" {
			home = g
		} else if g != home {
			return Overflow
		}
	}
	return home
}

// SelfJoinHome is the shard a self-join subscription on cells lives in:
// one that every publication it can overlap reaches, g0 on the grid and
// its top-level topic's shard for a topic. So the user's earlier
// self-joins are in the same store wherever the user was, and the store
// leaves out what they were sent as on one node; a subtree's shard would
// hold only those in its subtree. The user's plain subscriptions live in
// their own shards and are sent along (Node.priorsOf).
func (m Shards) SelfJoinHome(cells []subscriptions.Cell) string {
	if c := cells[0]; c.NS != subscriptions.NSCell {
		return m.topicShard(c.ID[:min(len(c.ID), 1)])
	}
	return Overflow
}

// PubHome is the shard whose answer and catalog a publication on cells
// belongs to: the first of its Targets.
func (m Shards) PubHome(cells []subscriptions.Cell) string { return m.Targets(cells)[0] }

// Targets are the shards a publication on cells is stored in, its home
// first: for each cell its subtree's shard (for a cell above Depth, every
// geo shard), then g0.
func (m Shards) Targets(cells []subscriptions.Cell) []string {
	if cells[0].NS != subscriptions.NSCell {
		return m.topicTargets(cells[0])
	}
	var out []string
	add := func(s string) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, c := range cells {
		if len(c.ID) >= m.depth() {
			add(m.group(c))
			continue
		}
		// A cell above the depth: its subtrees may hash anywhere (and a
		// cell off the grid may have any number of children).
		for g := range m.groups() {
			add(fmt.Sprintf("g%d", g+1))
		}
	}
	add(Overflow)
	return out
}

// Candidates are the shards a subscription of uid named by a cell may
// live in, likeliest first: a sid names only its first cell, and a
// subscription whose cover spans shards, or a self-join, lives in g0 (a
// topic self-join in its top-level topic's shard, or every topic
// subscription in its user's under TopicSpread).
func (m Shards) Candidates(c subscriptions.Cell, uid string) []string {
	if c.NS != subscriptions.NSCell && m.TopicSpread {
		return []string{m.userShard(uid)}
	}
	if c.NS != subscriptions.NSCell {
		cs := []string{m.topicHome(c)}
		if sj := m.SelfJoinHome([]subscriptions.Cell{c}); sj != cs[0] {
			cs = append(cs, sj)
		}
		return cs
	}
	if h := m.Home([]subscriptions.Cell{c}); h != Overflow {
		return []string{h, Overflow}
	}
	return []string{Overflow}
}
