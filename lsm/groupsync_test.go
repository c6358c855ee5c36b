package lsm

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/lsm/vfs"
)

// TestApplyNoSyncWait commits from many goroutines, each applying under a
// shared lock (as listdb orders its writes) and waiting for the fsync
// after releasing it. Every write whose WaitWAL returned survives a crash,
// and the waits share fsyncs: far fewer WAL syncs than writes.
func TestApplyNoSyncWait(t *testing.T) {
	mem := vfs.NewMem()
	var walSyncs atomic.Int64
	fs := vfs.Inject(mem, func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.HasSuffix(path, ".log") {
			walSyncs.Add(1)
			time.Sleep(time.Millisecond) // a disk's fsync takes a while
		}
		return nil
	})
	opts := smallOptions(fs)
	opts.MemTableSize = 1 << 20
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 16, 100
	var order sync.Mutex
	var acked sync.Map
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				k := fmt.Sprintf("w%02d-%04d", w, i)
				b := NewBatch()
				if err := b.Set([]byte(k), []byte(k)); err != nil {
					t.Error(err)
					return
				}
				order.Lock()
				pos, err := db.ApplyNoSyncWait(b)
				order.Unlock()
				if err == nil {
					err = db.WaitWAL(pos, true)
				}
				if err != nil {
					t.Error(err)
					return
				}
				acked.Store(k, true)
			}
		}()
	}
	wg.Wait()
	crashed := mem.CrashClone(vfs.CrashOptions{})
	syncs := walSyncs.Load()
	db.Close()
	if syncs >= writers*each/2 {
		t.Errorf("%d WAL syncs for %d synced writes: concurrent waits did not share fsyncs", syncs, writers*each)
	}
	db2, err := Open("/db", smallOptions(crashed))
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	n := 0
	acked.Range(func(k, _ any) bool {
		n++
		v, err := db2.Get([]byte(k.(string)))
		if err != nil || string(v) != k.(string) {
			t.Errorf("acknowledged %s lost after the crash: %q, %v", k, v, err)
		}
		return true
	})
	if n != writers*each {
		t.Fatalf("%d writes acknowledged, want %d", n, writers*each)
	}
}

// TestWaitWALWritten: a write waited for without sync is in the OS (the
// file's bytes), though a crash of the machine may still lose it.
func TestWaitWALWritten(t *testing.T) {
	db, _, walWrites := countWALWrites(t, 0)
	defer db.Close()
	b := NewBatch()
	b.Set([]byte("k"), []byte("v"))
	before := walWrites.Load()
	pos, err := db.ApplyNoSyncWait(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.WaitWAL(pos, false); err != nil {
		t.Fatal(err)
	}
	if walWrites.Load() == before {
		t.Fatal("WaitWAL(pos, false) returned before the record was written to the file")
	}
	// Waiting again costs nothing more.
	n := walWrites.Load()
	if err := db.WaitWAL(pos, false); err != nil || walWrites.Load() != n {
		t.Fatalf("second wait: err %v, %d more writes", err, walWrites.Load()-n)
	}
}

// BenchmarkSyncedWritesConcurrent: 256 goroutines each commit a small
// batch under a shared ordering lock and wait for its fsync outside it,
// as listdb does, on the OS's file system.
func BenchmarkSyncedWritesConcurrent(b *testing.B) {
	db, err := Open(b.TempDir(), &Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var order sync.Mutex
	var n atomic.Int64
	b.SetParallelism(128) // × GOMAXPROCS goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		batch := NewBatch()
		for pb.Next() {
			batch.Reset()
			k := fmt.Appendf(nil, "k%012d", n.Add(1))
			batch.Set(k, k)
			order.Lock()
			pos, err := db.ApplyNoSyncWait(batch)
			order.Unlock()
			if err == nil {
				err = db.WaitWAL(pos, true)
			}
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}
