package lsm

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/lsm/vfs"
)

// syncGate holds the syncs of the WALs it is armed for until released,
// or fails them.
type syncGate struct {
	mu      sync.Mutex
	armed   map[string]bool // WAL paths whose syncs are held
	fail    error           // returned instead of holding, when set
	entered chan string
	release chan struct{}
}

func newSyncGate() *syncGate {
	return &syncGate{armed: map[string]bool{}, entered: make(chan string, 16), release: make(chan struct{})}
}

func (g *syncGate) inject(op vfs.Op, path string) error {
	if op != vfs.OpSync || !strings.HasSuffix(path, ".log") {
		return nil
	}
	g.mu.Lock()
	armed, fail := g.armed[path], g.fail
	g.mu.Unlock()
	if !armed {
		return nil
	}
	if fail != nil {
		return fail
	}
	g.entered <- path
	<-g.release
	return nil
}

func (g *syncGate) arm(path string) {
	g.mu.Lock()
	g.armed[path] = true
	g.mu.Unlock()
}

// switchWhileOldSyncHeld opens a DB with a small memtable, holds (or
// fails) the first WAL's syncs and writes unsynced until the memtable
// switches. It returns the DB, the number of keys written, and the WAL
// paths: the first and the one after it.
func switchWhileOldSyncHeld(t *testing.T, fs vfs.FS, g *syncGate) (*DB, int, string, string) {
	t.Helper()
	db := mustOpen(t, "/db", &Options{FS: vfs.Inject(fs, g.inject), Logger: quietLogger, MemTableSize: 64 << 10})
	logs := filesWithSuffix(t, fs, "/db", ".log")
	if len(logs) != 1 {
		t.Fatalf("WALs at open: %v", logs)
	}
	first := logs[0]
	g.arm(first)
	n := 0
	wrote := make(chan error, 1)
	go func() {
		for ; len(filesWithSuffix(t, fs, "/db", ".log")) < 2; n++ {
			if n > 10_000 {
				wrote <- errors.New("the memtable never switched")
				return
			}
			if err := db.Set(fmt.Appendf(nil, "k%05d", n), bytes.Repeat([]byte("v"), 100), nil); err != nil {
				wrote <- fmt.Errorf("write %d: %w", n, err)
				return
			}
		}
		wrote <- nil
	}()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an unsynced write waited for the old WAL's sync")
	}
	logs = filesWithSuffix(t, fs, "/db", ".log")
	return db, n, first, logs[1]
}

// A memtable switch leaves the old WAL's last sync to the background:
// writes go on meanwhile, but nothing of the new WAL reaches its file,
// and a synced write waits, until the old one is on disk. Data is
// intact after a reopen.
func TestSwitchClosesTheOldWALInTheBackground(t *testing.T) {
	fs := vfs.NewMem()
	g := newSyncGate()
	db, n, first, second := switchWhileOldSyncHeld(t, fs, g)
	select {
	case p := <-g.entered:
		if p != first {
			t.Fatalf("held sync of %s, want %s", p, first)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the old WAL was never synced")
	}
	// More unsynced writes land in the new memtable while the old
	// log's sync is held.
	for i := 0; i < 50; i, n = i+1, n+1 {
		if err := db.Set(fmt.Appendf(nil, "k%05d", n), []byte("after"), nil); err != nil {
			t.Fatal(err)
		}
	}
	synced := make(chan error, 1)
	go func() { synced <- db.Set([]byte("synced"), []byte("x"), &WriteOptions{Sync: true}) }()
	time.Sleep(50 * time.Millisecond)
	select {
	case err := <-synced:
		t.Fatalf("a synced write returned (%v) before the older WAL was synced", err)
	default:
	}
	if data, _ := readFile(fs, second); len(data) != 0 {
		t.Fatalf("the new WAL holds %d bytes before the old one is synced", len(data))
	}
	close(g.release)
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	if data, _ := readFile(fs, second); len(data) == 0 {
		t.Fatal("the synced write is not in the new WAL")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = mustOpen(t, "/db", &Options{FS: fs, Logger: quietLogger})
	defer db.Close()
	for i := range n {
		if _, err := db.Get(fmt.Appendf(nil, "k%05d", i)); err != nil {
			t.Fatalf("k%05d after reopen: %v", i, err)
		}
	}
	if v, err := db.Get([]byte("synced")); err != nil || string(v) != "x" {
		t.Fatalf("synced = %q, %v", v, err)
	}
}

// An old WAL whose last sync fails fails the DB: a synced write in the
// new WAL is refused, never acknowledged over a lost older write.
func TestFailedCloseOfTheOldWALRefusesWrites(t *testing.T) {
	fs := vfs.NewMem()
	g := newSyncGate()
	g.fail = vfs.EIO
	db, _, _, _ := switchWhileOldSyncHeld(t, fs, g)
	defer db.Close()
	err := db.Set([]byte("synced"), []byte("x"), &WriteOptions{Sync: true})
	if !errors.Is(err, ErrWritesRefused) {
		t.Fatalf("synced write after a failed WAL close: %v, want ErrWritesRefused", err)
	}
	if err := db.Set([]byte("later"), []byte("x"), nil); !errors.Is(err, ErrWritesRefused) {
		t.Fatalf("later write: %v, want ErrWritesRefused", err)
	}
}

// A switch takes the log file made ahead of it and makes the next one in
// the background; Close removes the one left unused.
func TestSwitchTakesThePreparedWAL(t *testing.T) {
	fs := vfs.NewMem()
	db := mustOpen(t, "/db", &Options{FS: fs, Logger: quietLogger, MemTableSize: 64 << 10})
	logsOf := func() []string { return filesWithSuffix(t, fs, "/db", ".log") }
	var spare string
	for i := 0; i < 20_000; i++ {
		if err := db.Set(fmt.Appendf(nil, "k%05d", i), bytes.Repeat([]byte("v"), 100), nil); err != nil {
			t.Fatal(err)
		}
		if i%50 != 0 {
			continue
		}
		if err := db.Flush(); err != nil { // a switch, and the flush that frees its log
			t.Fatal(err)
		}
		db.mu.Lock()
		live, next := db.log.num, db.nextWAL
		db.mu.Unlock()
		if next == nil {
			t.Fatal("no next WAL after a switch")
		}
		<-next.done
		if spare != "" && makeFilename(fs, "/db", fileTypeLog, live) != spare {
			t.Fatalf("the switch wrote to log %d, not the prepared %s", live, spare)
		}
		spare = makeFilename(fs, "/db", fileTypeLog, next.num)
		all := logsOf()
		if want := []string{makeFilename(fs, "/db", fileTypeLog, live), spare}; !slices.Equal(all, want) {
			t.Fatalf("logs %v after a flush, want the live one and the spare: %v", all, want)
		}
		if i >= 200 {
			break
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if all := logsOf(); len(all) != 1 {
		t.Fatalf("logs after Close: %v, want the live one", all)
	}
}
