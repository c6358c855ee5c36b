package lsm

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/lsm/vfs"
)

// heldSync holds the WAL's next fsync until released, then fails it with
// err (nil: it succeeds).
type heldSync struct {
	armed   chan struct{} // closed: the next WAL sync is held
	held    atomic.Bool   // that sync has come
	entered chan struct{}
	release chan struct{}
	err     error
}

func (h *heldSync) inject(op vfs.Op, path string) error {
	if op != vfs.OpSync || !strings.HasSuffix(path, ".log") {
		return nil
	}
	select {
	case <-h.armed:
	default:
		return nil
	}
	if !h.held.CompareAndSwap(false, true) {
		return nil // a later sync than the held one
	}
	// Told whenever the test gets to listen: a sync that came first
	// and found nobody listening went by unheld, and the test waited
	// for it forever.
	h.entered <- struct{}{}
	<-h.release
	return h.err
}

// Writes become visible in order: while a synced write's fsync runs, a
// later unsynced write stays invisible and unanswered; when the fsync
// succeeds both appear, and when it fails neither ever does and both
// writers are refused. (A commit pipeline that let the later group into
// the memtable during the fsync, tried and measured no faster at 64
// writers, must keep this.)
func TestAGroupIsVisibleOnlyAfterTheSyncsBeforeIt(t *testing.T) {
	for _, fail := range []bool{false, true} {
		h := &heldSync{armed: make(chan struct{}), entered: make(chan struct{}), release: make(chan struct{})}
		if fail {
			h.err = vfs.EIO
		}
		db := mustOpen(t, "/db", smallOptions(vfs.Inject(vfs.NewMem(), h.inject)))
		close(h.armed)
		synced := make(chan error, 1)
		go func() { synced <- db.Set([]byte("a"), []byte("synced"), Sync) }()
		<-h.entered // a's fsync is under way
		later := make(chan error, 1)
		go func() { later <- db.Set([]byte("b"), []byte("later"), nil) }()
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := db.Get([]byte("b")); !errors.Is(err, ErrNotFound) {
				t.Fatalf("fail=%v: the later write is visible before the sync before it (%v)", fail, err)
			}
			if _, err := db.Get([]byte("a")); !errors.Is(err, ErrNotFound) {
				t.Fatalf("fail=%v: the synced write is visible before its sync (%v)", fail, err)
			}
			select {
			case err := <-later:
				t.Fatalf("fail=%v: the later write returned (%v) before the sync before it", fail, err)
			default:
			}
			time.Sleep(10 * time.Millisecond)
		}
		close(h.release)
		errA, errB := <-synced, <-later
		for _, k := range []string{"a", "b"} {
			_, err := db.Get([]byte(k))
			if fail && !errors.Is(err, ErrNotFound) {
				t.Fatalf("after a failed sync %q is visible (%v)", k, err)
			}
			if !fail && err != nil {
				t.Fatalf("after the sync %q is not visible: %v", k, err)
			}
		}
		if fail != (errA != nil) || fail != (errB != nil) {
			t.Fatalf("fail=%v: the writers were told %v and %v", fail, errA, errB)
		}
		db.Close()
	}
}
