package catalog

import (
	"fmt"
	"math"
	"testing"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/secondary"
	"github.com/seed84792017/cellcast/subscriptions"
)

// BenchmarkExpire deletes 2,000 expired publications from a synced
// catalog with the broker's default indexes: in lots (the janitor's way,
// Expire) and, as the peer, one Delete a publication (the janitor before
// it, one fsync per engine per publication). Report ns per publication:
//
//	go test ./catalog -run '^$' -bench Expire -benchtime 3x
func BenchmarkExpire(b *testing.B) {
	const n = 2000
	ix, err := ParseIndexes(DefaultIndexes)
	if err != nil {
		b.Fatal(err)
	}
	for _, way := range []string{"lots", "one-by-one"} {
		b.Run(way, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				now := int64(1)
				c, err := Open(b.TempDir(), Config{Indexes: ix, Sync: true, Now: func() int64 { return now }})
				if err != nil {
					b.Fatal(err)
				}
				for i := range n {
					p := subscriptions.Publication{Uid: fmt.Sprintf("u%d", i%50), Cell: subscriptions.Cell{ID: dewey.ID{1, 2}},
						Tp: int64(10 + i), Tmax: int64(100 + i), Attrs: map[string]string{"category": fmt.Sprintf("c%d", i%7)}}
					if err := c.Add(&p); err != nil {
						b.Fatal(err)
					}
				}
				// The janitor would join in once a second: stop it.
				c.closeMu.Do(func() { close(c.stop) })
				<-c.done
				now = 1 << 40
				b.StartTimer()
				got := 0
				if way == "lots" {
					got, err = c.Expire()
				} else {
					rows, _ := c.t.RangeLookup(colExpires, secondary.IntValue(math.MinInt64), secondary.IntValue(now), 0)
					for _, r := range rows {
						if err = c.t.Delete(r.Key); err != nil {
							break
						}
						got++
					}
				}
				b.StopTimer()
				if err != nil || got != n {
					b.Fatalf("%d of %d expired: %v", got, n, err)
				}
				c.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/pub")
		})
	}
}
