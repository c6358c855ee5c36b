package catalog

import (
	"context"
	"fmt"
	"testing"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/subscriptions"
)

// BenchmarkReconcile is the start of a broker whose store holds 100,000
// live publications, all catalogued already: a synced catalog checks each
// one, an unsynced one (the broker's) writes each again. Report ns per
// publication:
//
//	go test ./catalog -run '^$' -bench Reconcile -benchtime 1x
func BenchmarkReconcile(b *testing.B) {
	const n = 100_000
	ix, err := ParseIndexes(DefaultIndexes)
	if err != nil {
		b.Fatal(err)
	}
	src := &fakeStore{asOf: n + 10}
	for i := range n {
		src.pubs = append(src.pubs, subscriptions.Publication{Uid: fmt.Sprintf("u%d", i%500), Cell: subscriptions.Cell{ID: dewey.ID{1, 2, uint32(1 + i%4)}},
			Tp: int64(1 + i), Tmax: int64(n + 1000 + i), Desc: "an incident", Attrs: map[string]string{"category": fmt.Sprintf("c%d", i%7)}})
	}
	for _, synced := range []bool{true, false} {
		b.Run(fmt.Sprintf("synced=%v", synced), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				c, err := Open(b.TempDir(), Config{Indexes: ix, Now: func() int64 { return n + 10 }})
				if err != nil {
					b.Fatal(err)
				}
				for i := range src.pubs {
					if err := c.Add(&src.pubs[i]); err != nil {
						b.Fatal(err)
					}
				}
				c.synced = synced // as a catalog opened with Sync would check
				b.StartTimer()
				st, err := c.Reconcile(context.Background(), src)
				b.StopTimer()
				if err != nil || st.Added+st.Rewritten != 0 && st.Rewritten != n || st.Deleted != 0 {
					b.Fatal(st, err)
				}
				c.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/publication")
		})
	}
}
