package lsm

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seed84792017/cellcast/lsm/vfs"
)

func checkpointKey(w, i int) []byte { return fmt.Appendf(nil, "w%d/%08d", w, i) }
func checkpointValue(w, i int) []byte {
	return bytes.Repeat(fmt.Appendf(nil, "v%d.%d;", w, i), 20)
}

// TestCheckpointUnderWritesHoldsEveryAcknowledgedWrite takes checkpoints
// while writers run and flushes and compactions go on, then opens each
// one: every write acknowledged before its Checkpoint call is there, and
// each writer's keys form a prefix of what it wrote (the copy is one
// moment of the log, not a mix).
func TestCheckpointUnderWritesHoldsEveryAcknowledgedWrite(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "src")
	db := mustOpen(t, src, smallOptions(vfs.Default))
	const writers = 3
	var acked [writers]atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := db.Set(checkpointKey(w, i), checkpointValue(w, i), &WriteOptions{Sync: w == 0}); err != nil {
					t.Error(err)
					return
				}
				acked[w].Store(int64(i + 1))
			}
		}()
	}
	type taken struct {
		dir   string
		acked [writers]int64
	}
	var cps []taken
	for k := range 6 {
		for acked[writers-1].Load() < int64(300*(k+1)) {
			runtime.Gosched() // let the writers get ahead: flushes and compactions happen
		}
		var c taken
		for w := range writers {
			c.acked[w] = acked[w].Load()
		}
		c.dir = filepath.Join(root, fmt.Sprintf("cp%d", k))
		if err := db.Checkpoint(c.dir); err != nil {
			t.Fatal(err)
		}
		cps = append(cps, c)
	}
	close(stop)
	wg.Wait()
	if m := db.Metrics(); m.FlushCount == 0 || m.CompactCount == 0 {
		t.Fatalf("no flush or compaction ran (%d, %d): the test checks nothing that matters", m.FlushCount, m.CompactCount)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range cps {
		cp := mustOpen(t, c.dir, smallOptions(vfs.Default))
		for w := range writers {
			n := 0
			for ; ; n++ {
				v, err := cp.Get(checkpointKey(w, n))
				if errors.Is(err, ErrNotFound) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(v, checkpointValue(w, n)) {
					t.Fatalf("%s: key %s holds %q", c.dir, checkpointKey(w, n), v)
				}
			}
			if int64(n) < c.acked[w] {
				t.Fatalf("%s: writer %d has %d keys, but %d were acknowledged before the checkpoint", c.dir, w, n, c.acked[w])
			}
			// Past the prefix, nothing.
			for i := n + 1; i < n+50; i++ {
				if _, err := cp.Get(checkpointKey(w, i)); !errors.Is(err, ErrNotFound) {
					t.Fatalf("%s: writer %d has key %d but not %d", c.dir, w, i, n)
				}
			}
		}
		if err := cp.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCheckpointRefusesAnExistingDirAndLeavesTheSourceWorking checks the
// refusal, and that a checkpoint's pause of WAL deletion ends with it.
func TestCheckpointRefusesAnExistingDirAndLeavesTheSourceWorking(t *testing.T) {
	fs := vfs.NewMem()
	db := mustOpen(t, "/src", smallOptions(fs))
	if err := fs.MkdirAll("/taken"); err != nil {
		t.Fatal(err)
	}
	if err := db.Checkpoint("/taken"); !errors.Is(err, ErrCheckpointExists) {
		t.Fatalf("checkpoint into an existing directory: %v", err)
	}
	for i := range 2000 {
		if err := db.Set(checkpointKey(0, i), checkpointValue(0, i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Checkpoint("/cp"); err != nil {
		t.Fatal(err)
	}
	for i := 2000; i < 6000; i++ {
		if err := db.Set(checkpointKey(0, i), checkpointValue(0, i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	names, _ := fs.List("/src")
	logs := 0
	for _, n := range names {
		if typ, _, ok := parseFilename(n); ok && typ == fileTypeLog {
			logs++
		}
	}
	if logs > 2 {
		t.Fatalf("%d WALs left in the source after the checkpoint: %v", logs, names)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Checkpoint("/cp2"); !errors.Is(err, ErrClosed) {
		t.Fatalf("checkpoint of a closed DB: %v", err)
	}
	cp := mustOpen(t, "/cp", smallOptions(fs))
	defer cp.Close()
	if _, err := cp.Get(checkpointKey(0, 1999)); err != nil {
		t.Fatalf("last write before the checkpoint: %v", err)
	}
	if _, err := cp.Get(checkpointKey(0, 2000)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a write after the checkpoint is in it: %v", err)
	}
}
