package lsm

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/lsm/vfs"
)

// countWALWrites opens a DB whose WAL writes are counted.
func countWALWrites(t *testing.T, delay time.Duration) (*DB, *vfs.MemFS, *atomic.Int64) {
	t.Helper()
	mem := vfs.NewMem()
	var n atomic.Int64
	fs := vfs.Inject(mem, func(op vfs.Op, path string) error {
		if op == vfs.OpWrite && strings.HasSuffix(path, ".log") {
			n.Add(1)
		}
		return nil
	})
	opts := smallOptions(fs)
	opts.MemTableSize = 4 << 20 // no memtable switch, which writes the log out
	opts.WALFlushDelay = delay
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	return db, mem, &n
}

// TestWALFlushDelay: unsynced writes wait in memory for the flusher as
// long as Options.WALFlushDelay says, then reach the file; Close writes
// out what still waits.
func TestWALFlushDelay(t *testing.T) {
	t.Run("long", func(t *testing.T) {
		db, mem, writes := countWALWrites(t, time.Hour)
		before := writes.Load()
		for i := range 100 {
			if err := db.Set(fmt.Appendf(nil, "k%03d", i), []byte("v"), NoSync); err != nil {
				t.Fatal(err)
			}
		}
		// A hundred times the default delay: a flusher that ignored the
		// option would have written by now.
		time.Sleep(50 * time.Millisecond)
		if n := writes.Load() - before; n != 0 {
			t.Fatalf("%d WAL writes within 50ms under a one-hour flush delay", n)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db = mustOpen(t, "/db", smallOptions(mem.CrashClone(vfs.CrashOptions{})))
		defer db.Close()
		for i := range 100 {
			if v, err := db.Get(fmt.Appendf(nil, "k%03d", i)); err != nil || string(v) != "v" {
				t.Fatalf("k%03d after Close and a crash: %q, %v", i, v, err)
			}
		}
	})
	t.Run("default", func(t *testing.T) {
		db, _, writes := countWALWrites(t, 0)
		defer db.Close()
		before := writes.Load()
		if err := db.Set([]byte("k"), []byte("v"), NoSync); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for writes.Load() == before {
			if time.Now().After(deadline) {
				t.Fatal("an unsynced write never reached the WAL file")
			}
			time.Sleep(time.Millisecond)
		}
	})
	t.Run("negative", func(t *testing.T) {
		opts := smallOptions(vfs.NewMem())
		opts.WALFlushDelay = -time.Millisecond
		if _, err := Open("/db", opts); !errors.Is(err, ErrInvalidOptions) {
			t.Fatalf("Open with a negative WALFlushDelay: %v, want ErrInvalidOptions", err)
		}
	})
}
