package storetest

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/subscriptions"
)

// stampClock hands the oracle the stamps the store issued, one at a time.
type stampClock struct{ t int64 }

func (c *stampClock) Now() int64 { return c.t }

// concurrentOp is one operation of the concurrent run and the store's answer.
type concurrentOp struct {
	stamp int64
	sub   *subscriptions.SubscribeRequest
	pub   *subscriptions.PublishRequest
	got   string
}

func subscribeAnswer(r *subscriptions.SubscribeResult) string {
	return fmt.Sprintf("%s stored=%v past=[%s]", r.Sub.Sid(), r.Stored, pids(r.Past))
}

func publishAnswer(r *subscriptions.PublishResult) string {
	return fmt.Sprintf("%s stored=%v matches=[%s] recent=[%s]", r.Pub.Pid(), r.Stored, sids(r.Matches), pids(r.Recent))
}

// Concurrent runs random SUBSCRIBEs and PUBLISHes from several goroutines at
// once while the clock advances and flushes and compactions run, then
// replays them on the oracle in stamp order. The store orders writes by
// stamp, so every operation must get exactly the answer it would have got
// had all run one at a time in that order: each matching pair is reported
// once, by the later of its two operations, whatever the interleaving.
func Concurrent(t *testing.T, open Opener) {
	r := newRun(t, open, 3, false)
	defer func() { r.store.Close() }()
	workers, perWorker := 4, 3000
	if testing.Short() {
		perWorker = 1000
	}
	if *long {
		perWorker *= 10
	}
	var (
		mu  sync.Mutex
		ops []concurrentOp
		wg  sync.WaitGroup
	)
	st := r.store // no reopen while workers run
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			ctx := context.Background()
			rng := rand.New(rand.NewSource(seed))
			local := make([]concurrentOp, 0, perWorker)
			defer func() {
				mu.Lock()
				ops = append(ops, local...)
				mu.Unlock()
			}()
			for i := 0; i < perWorker; i++ {
				uid := r.users[rng.Intn(len(r.users))]
				c, err := r.cellFrom(rng)
				if err != nil {
					t.Error(err)
					return
				}
				var op concurrentOp
				switch p := rng.Intn(100); {
				case p < 45:
					op.sub = subscribeRequest(rng, uid, c)
					res, err := st.Subscribe(ctx, op.sub)
					if err != nil {
						t.Errorf("subscribe %+v: %v", op.sub, err)
						return
					}
					op.stamp, op.got = res.Sub.Ts, subscribeAnswer(res)
				case p < 90:
					op.pub = publishRequest(rng, uid, c)
					res, err := st.Publish(ctx, op.pub)
					if err != nil {
						t.Errorf("publish %+v: %v", op.pub, err)
						return
					}
					op.stamp, op.got = res.Pub.Tp, publishAnswer(res)
				case p < 98:
					r.sc.Advance(time.Duration(rng.Intn(400)) * time.Millisecond)
					continue
				case p < 99:
					if err := st.Backend().Flush(); err != nil {
						t.Error(err)
						return
					}
					continue
				default:
					if err := st.Backend().Compact(ctx); err != nil {
						t.Error(err)
						return
					}
					continue
				}
				local = append(local, op)
			}
		}(int64(100 + w))
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].stamp < ops[j].stamp })
	clock := &stampClock{}
	oracle := subscriptions.NewOracle(clock, limits)
	ctx := context.Background()
	for i, op := range ops {
		if i > 0 && op.stamp == ops[i-1].stamp {
			t.Fatalf("two operations stamped %d", op.stamp)
		}
		clock.t = op.stamp
		var want string
		if op.sub != nil {
			res, err := oracle.Subscribe(ctx, op.sub)
			if err != nil {
				t.Fatal(err)
			}
			want = subscribeAnswer(res)
		} else {
			res, err := oracle.Publish(ctx, op.pub)
			if err != nil {
				t.Fatal(err)
			}
			want = publishAnswer(res)
		}
		if op.got != want {
			t.Fatalf("operation %d of %d (stamp %d):\n store  %s\n oracle %s", i, len(ops), op.stamp, op.got, want)
		}
	}
}
