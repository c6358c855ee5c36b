package lsm

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/seed84792017/cellcast/lsm/record"
	"github.com/seed84792017/cellcast/lsm/vfs"
)

// walOps records what the engine does to its WAL files, in order.
type walOps struct {
	vfs.FS
	mu  sync.Mutex
	ops []string // "write N", "writeat N", "sync", "syncdata"
}

func (w *walOps) Create(name string) (vfs.File, error) {
	f, err := w.FS.Create(name)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &walOpsFile{File: f, w: w}, nil
}

func (w *walOps) add(op string) {
	w.mu.Lock()
	w.ops = append(w.ops, op)
	w.mu.Unlock()
}

type walOpsFile struct {
	vfs.File
	w *walOps
}

func (f *walOpsFile) Write(p []byte) (int, error) {
	f.w.add(fmt.Sprintf("write %d", len(p)))
	return f.File.Write(p)
}

func (f *walOpsFile) WriteAt(p []byte, off int64) (int, error) {
	f.w.add(fmt.Sprintf("writeat %d", len(p)))
	return f.File.WriteAt(p, off)
}

func (f *walOpsFile) Sync() error     { f.w.add("sync"); return f.File.Sync() }
func (f *walOpsFile) SyncData() error { f.w.add("syncdata"); return f.File.SyncData() }

func walFileSize(t *testing.T, fs vfs.FS, d *DB) int64 {
	t.Helper()
	f, err := fs.Open(makeFilename(fs, d.dir, fileTypeLog, d.log.num))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, err := f.Size()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A DB that never asks for a sync appends to its WAL as before; the first
// synced commit preallocates it: zeros past the log's end, and from then
// on every write to the WAL is followed by an fdatasync before the next,
// none longer than record.PreallocWindow, a batch larger than that
// included. After a crash every synced write is there.
func TestWALIsPreallocatedOnceACommitSyncs(t *testing.T) {
	mem := vfs.NewMem()
	fs := &walOps{FS: mem}
	opts := smallOptions(fs)
	opts.MemTableSize = 16 << 20 // one WAL for the whole test
	d := mustOpen(t, "/db", opts)
	for i := 0; i < 100; i++ {
		if err := d.Set([]byte(fmt.Sprintf("a%03d", i)), []byte("unsynced"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.log.flush(false); err != nil {
		t.Fatal(err)
	}
	if got, want := walFileSize(t, mem, d), d.log.written.Load(); got != want {
		t.Fatalf("unsynced WAL: file of %d bytes, log of %d", got, want)
	}
	fs.mu.Lock()
	for _, op := range fs.ops {
		if op != "write" && !strings.HasPrefix(op, "write ") {
			t.Fatalf("unsynced WAL saw %q", op)
		}
	}
	fs.ops = nil
	fs.mu.Unlock()

	sync := &WriteOptions{Sync: true}
	if err := d.Set([]byte("b000"), []byte("synced"), sync); err != nil {
		t.Fatal(err)
	}
	if size, end := walFileSize(t, mem, d), d.log.synced.Load(); size < end+walZeroChunk/2 {
		t.Fatalf("after a synced commit: file of %d bytes, log of %d: not preallocated", size, end)
	}
	big := bytes.Repeat([]byte("x"), 3*record.PreallocWindow+12345)
	if err := d.Set([]byte("b001"), big, sync); err != nil {
		t.Fatal(err)
	}
	for i := 2; i < 50; i++ {
		if err := d.Set([]byte(fmt.Sprintf("b%03d", i)), []byte("synced"), sync); err != nil {
			t.Fatal(err)
		}
	}
	fs.mu.Lock()
	ops := fs.ops
	fs.mu.Unlock()
	// The switch: what was buffered and the mark appended (the flusher
	// may have appended some of it before the commit asked for a sync),
	// zeros after them, one fsync. Then only fdatasyncs.
	sw := slices.IndexFunc(ops, func(op string) bool { return !strings.HasPrefix(op, "write ") })
	if sw < 1 || sw+1 >= len(ops) || ops[sw] != fmt.Sprintf("writeat %d", walZeroChunk) || ops[sw+1] != "sync" {
		t.Fatalf("switch: %q", ops[:min(len(ops), max(sw, 0)+2)])
	}
	unsynced, writes := 0, 0
	for _, op := range ops[sw+2:] {
		var n int
		switch {
		case op == "syncdata":
			unsynced = 0
		case op == "sync":
			t.Fatalf("an fsync after the switch: %q", ops)
		case strings.HasPrefix(op, "writeat "):
			// zeros ahead, beyond the log's end
		default:
			fmt.Sscanf(op, "write %d", &n)
			writes++
			unsynced += n
			if unsynced > record.PreallocWindow {
				t.Fatalf("%d bytes written before an fdatasync: %q", unsynced, ops)
			}
		}
	}
	if writes < 52 { // the big batch alone needs four
		t.Fatalf("%d writes after the switch", writes)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopen a crash's leftovers and the closed DB alike.
	for _, fs := range []vfs.FS{mem.CrashClone(vfs.CrashOptions{}), mem} {
		d := mustOpen(t, "/db", smallOptions(fs))
		for i := 0; i < 50; i++ {
			want := []byte("synced")
			if i == 1 {
				want = big
			}
			v, err := d.Get([]byte(fmt.Sprintf("b%03d", i)))
			if err != nil || !bytes.Equal(v, want) {
				t.Fatalf("b%03d: %d bytes, %v", i, len(v), err)
			}
		}
		d.Close()
	}
}

// On the operating system's file system: a preallocated WAL (written with
// pwrite and fdatasync), copied while the DB is open as a crash would
// leave it with the page cache intact, opens with every synced write.
func TestPreallocatedWALOnDisk(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir+"/db", &Options{Logger: quietLogger})
	defer d.Close()
	sync := &WriteOptions{Sync: true}
	want := map[string][]byte{}
	for i := 0; i < 300; i++ {
		k, v := fmt.Sprintf("k%03d", i), bytes.Repeat([]byte{byte('a' + i%26)}, 100+i%7*1000)
		if i == 150 {
			v = bytes.Repeat([]byte("big"), record.PreallocWindow)
		}
		if err := d.Set([]byte(k), v, sync); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	if size, end := walFileSize(t, vfs.Default, d), d.log.synced.Load(); size <= end {
		t.Fatalf("WAL file of %d bytes, log of %d: not preallocated", size, end)
	}
	names, err := os.ReadDir(dir + "/db")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir+"/copy", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range names {
		if e.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(dir + "/db/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dir+"/copy/"+e.Name(), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := mustOpen(t, dir+"/copy", &Options{Logger: quietLogger})
	defer c.Close()
	for k, v := range want {
		got, err := c.Get([]byte(k))
		if err != nil || !bytes.Equal(got, v) {
			t.Fatalf("%s: %d bytes, %v", k, len(got), err)
		}
	}
}
