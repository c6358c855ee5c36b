package broker

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/lsm/vfs"
)

// One connection sends publishes and subscribes without waiting, on a
// disk whose fsyncs are slow. The broker must keep the connection's
// order — each subscribe's past results hold exactly the publications
// sent before it, its notifications exactly those sent after, every
// reply leaves in request order and before its subscription's
// notifications — while the requests share fsyncs rather than paying one
// each.
func TestPipelinedRequestsKeepTheirOrderAndShareFsyncs(t *testing.T) {
	var syncs atomic.Int64
	var counting atomic.Bool
	fs := vfs.Inject(vfs.Default, func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.HasSuffix(path, ".log") && counting.Load() {
			syncs.Add(1)
			time.Sleep(20 * time.Millisecond)
		}
		return nil
	})
	b := start(t, Config{FS: fs, Indexes: "none"})
	c := dial(t, b, nil)
	wantOp(t, c.do(msg{"op": "publish", "uid": "p", "cell": "1.3", "expires": "5m"}), "published") // warm the store up

	const n = 48
	counting.Store(true)
	for i := range n {
		m := msg{"id": fmt.Sprint(i), "uid": "u", "cell": "1.2"}
		if i%2 == 0 {
			m["op"], m["expires"] = "publish", "5m"
		} else {
			m["op"], m["past"], m["future"] = "subscribe", "5m", "5m"
		}
		c.send(m)
	}
	var (
		next    int
		pids    []string           // by request, "" for subscribes
		sidOf   = map[string]int{} // sid → request
		past    = map[int][]string{}
		notes   = map[int][]string{}
		pending int // notifications owed: to each subscribe, the publishes after it
	)
	for i := 1; i < n; i += 2 {
		pending += (n - i) / 2
	}
	for next < n || pending > 0 {
		f := c.next()
		if f["op"] == "notification" {
			i, ok := sidOf[f["sid"].(string)]
			if !ok {
				t.Fatalf("notification %v before its subscription's reply", f)
			}
			notes[i] = append(notes[i], f["publication"].(msg)["pid"].(string))
			pending--
			continue
		}
		if f["id"] != fmt.Sprint(next) {
			t.Fatalf("reply %v, want the reply to request %d first", f, next)
		}
		if next%2 == 0 {
			wantOp(t, f, "published")
			pids = append(pids, f["pid"].(string))
		} else {
			wantOp(t, f, "subscribed")
			pids = append(pids, "")
			sidOf[f["sid"].(string)] = next
			past[next] = pidsOf(results(f))
		}
		next++
	}
	counting.Store(false)
	c.quiet()
	for i := 1; i < n; i += 2 {
		var before, after []string
		for j := 0; j < n; j += 2 {
			if j < i {
				before = append(before, pids[j])
			} else {
				after = append(after, pids[j])
			}
		}
		slices.Sort(before)
		got := slices.Sorted(slices.Values(past[i]))
		if !slices.Equal(got, before) {
			t.Fatalf("subscribe %d: past results %v, want the publications sent before it %v", i, got, before)
		}
		if !slices.Equal(notes[i], after) { // in publication order too
			t.Fatalf("subscribe %d: notifications %v, want the publications sent after it %v", i, notes[i], after)
		}
	}
	if s := syncs.Load(); s > n/2 {
		t.Fatalf("%d pipelined requests took %d WAL fsyncs: they do not share them", n, s)
	}
	t.Logf("%d pipelined requests, %d WAL fsyncs", n, syncs.Load())
}
