package broker

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	cc "github.com/seed84792017/cellcast/client"
	"github.com/seed84792017/cellcast/cluster"
)

// TestClusterQueries: queries through any node of a cluster answer as the
// oracle of acknowledged publications does: the newest k live ones with
// the attribute, each once though a shallow publication is stored in
// several shards, paged between nodes when a shard's answer is large,
// and the same after a node stops and its shards are rebuilt elsewhere.
func TestClusterQueries(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	brokers := startCluster(t, 3)
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var clients []*cc.Client
	for i, b := range brokers {
		fallback := othersURLs(brokers, i)
		c, err := cc.Dial(ctx, wsURL(b), cc.Options{UID: []string{"alice", "bob", "carol"}[i], Fallback: fallback,
			MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Log: quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		clients = append(clients, c)
	}
	type pub struct {
		pid, uid, category, cell string
		tp, expires              time.Time
	}
	var acked []pub
	r := rand.New(rand.NewSource(7))
	publish := func(c *cc.Client, uid, cell, category, desc string, life time.Duration) {
		t.Helper()
		res, err := c.Publish(ctx, cc.PublishRequest{Location: cc.Cell(cell), Expires: life, Desc: desc, Attrs: map[string]string{"category": category}})
		if err != nil {
			t.Fatal(err)
		}
		acked = append(acked, pub{res.Pid, uid, category, res.Cell, res.Tp, res.ExpiresAt})
	}
	for i := range 150 {
		// Most at or below the shard depth, in one geo shard (and g0);
		// one in ten shallower, stored in every shard.
		depth := cluster.DefaultShardDepth + r.Intn(4)
		if i%10 == 0 {
			depth = 1 + r.Intn(3)
		}
		parts := make([]string, depth)
		for k := range parts {
			parts[k] = fmt.Sprint(1 + r.Intn(4))
		}
		life := time.Hour
		if i%15 == 0 {
			life = time.Second // expired by the time of the queries
		}
		k := r.Intn(3)
		publish(clients[k], []string{"alice", "bob", "carol"}[k], strings.Join(parts, "."), []string{"flood", "fire", "traffic"}[r.Intn(3)], fmt.Sprint("p", i), life)
	}
	// More than a page (queryPageBytes) from the one shard that holds them.
	big := strings.Repeat("x", 4000)
	for range 140 {
		publish(clients[0], "alice", "3.3.3.3.3.3.3.3.3.3.3", "big", big, time.Hour)
	}
	time.Sleep(1500 * time.Millisecond)
	oracle := func(keep func(pub) bool, k int) []string {
		var out []pub
		now := time.Now()
		for _, p := range acked {
			if p.expires.After(now) && keep(p) {
				out = append(out, p)
			}
		}
		slices.SortFunc(out, func(a, b pub) int {
			if c := b.tp.Compare(a.tp); c != 0 {
				return c
			}
			return cmp.Compare(a.cell, b.cell)
		})
		var pids []string
		for _, p := range out[:min(k, len(out))] {
			pids = append(pids, p.pid)
		}
		return pids
	}
	mid := acked[60].tp
	cases := []struct {
		q    cc.QueryRequest
		keep func(pub) bool
	}{
		{cc.QueryRequest{Attr: "uid", Eq: "bob", K: 10}, func(p pub) bool { return p.uid == "bob" }},
		{cc.QueryRequest{Attr: "uid", Eq: "carol", K: 1000}, func(p pub) bool { return p.uid == "carol" }},
		{cc.QueryRequest{Attr: "category", Eq: "flood", K: 7}, func(p pub) bool { return p.category == "flood" }},
		{cc.QueryRequest{Attr: "category", Eq: "fire", K: 1000}, func(p pub) bool { return p.category == "fire" }},
		{cc.QueryRequest{Attr: "category", Eq: "big", K: 1000}, func(p pub) bool { return p.category == "big" }},
		{cc.QueryRequest{Attr: "tp", From: acked[10].tp.Format(time.RFC3339Nano), To: mid.Format(time.RFC3339Nano), K: 1000},
			func(p pub) bool { return !p.tp.Before(acked[10].tp) && !p.tp.After(mid) }},
	}
	check := func(nodes []int) {
		t.Helper()
		for _, i := range nodes {
			for _, c := range cases {
				var got []string
				for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
					res, err := clients[i].Query(ctx, c.q)
					got = got[:0]
					if err == nil {
						for _, p := range res.Publications {
							got = append(got, p.Pid)
						}
					}
					if want := oracle(c.keep, c.q.K); err == nil && slices.Equal(got, want) {
						break
					} else if time.Now().After(deadline) {
						t.Fatalf("node %d, %+v: got %d results %v (err %v), want %d %v", i, c.q, len(got), got, err, len(want), want)
					}
				}
			}
		}
	}
	check([]int{0, 1, 2})
	if _, err := clients[0].Query(ctx, cc.QueryRequest{Attr: "colour", Eq: "red"}); err == nil || !strings.Contains(err.Error(), `"colour" is not indexed`) {
		t.Fatalf("a query on an attribute not indexed: %v", err)
	}
	brokers[2].crash() // its shards are rebuilt from their logs elsewhere
	check([]int{0, 1})
}
