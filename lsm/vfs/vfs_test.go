package vfs

import (
	"errors"
	"io"
	"math/rand"
	"os"
	"testing"
)

func writeAll(t *testing.T, fs FS, name, data string, sync bool) {
	t.Helper()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
}

func readAll(t *testing.T, fs FS, name string) string {
	t.Helper()
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func syncDir(t *testing.T, fs FS, dir string) {
	t.Helper()
	d, err := fs.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	d.Close()
}

func TestMemCrashKeepsOnlySynced(t *testing.T) {
	fs := NewMem()
	if err := fs.MkdirAll("/db"); err != nil {
		t.Fatal(err)
	}
	writeAll(t, fs, "/db/a", "synced", true)
	syncDir(t, fs, "/db")
	// Unsynced tail of a durable file is lost.
	f, _ := fs.Open("/db/a")
	f.Close()
	writeAll(t, fs, "/db/b", "never-dir-synced", true)

	c := fs.CrashClone(CrashOptions{})
	if got := readAll(t, c, "/db/a"); got != "synced" {
		t.Fatalf("a = %q", got)
	}
	if c.Exists("/db/b") {
		t.Fatal("b survived a crash without a directory sync")
	}
	// The original is unchanged.
	if got := readAll(t, fs, "/db/b"); got != "never-dir-synced" {
		t.Fatalf("original b = %q", got)
	}
}

func TestMemCrashDropsUnsyncedTail(t *testing.T) {
	fs := NewMem()
	fs.MkdirAll("/d")
	f, _ := fs.Create("/d/log")
	f.Write([]byte("hello"))
	f.Sync()
	f.Write([]byte(" world"))
	syncDir(t, fs, "/d")
	if got := readAll(t, fs.CrashClone(CrashOptions{}), "/d/log"); got != "hello" {
		t.Fatalf("got %q", got)
	}
	// With a random torn tail, the result is some prefix of what was written.
	for seed := int64(0); seed < 20; seed++ {
		got := readAll(t, fs.CrashClone(CrashOptions{Rand: rand.New(rand.NewSource(seed))}), "/d/log")
		if len(got) < 5 || got != "hello world"[:len(got)] {
			t.Fatalf("seed %d: got %q", seed, got)
		}
	}
}

func TestMemRenameDurableAfterDirSync(t *testing.T) {
	fs := NewMem()
	fs.MkdirAll("/d")
	writeAll(t, fs, "/d/tmp", "x", true)
	syncDir(t, fs, "/d")
	if err := fs.Rename("/d/tmp", "/d/CURRENT"); err != nil {
		t.Fatal(err)
	}
	if c := fs.CrashClone(CrashOptions{}); c.Exists("/d/CURRENT") || !c.Exists("/d/tmp") {
		t.Fatal("rename became durable without a dir sync")
	}
	syncDir(t, fs, "/d")
	if c := fs.CrashClone(CrashOptions{}); !c.Exists("/d/CURRENT") || c.Exists("/d/tmp") {
		t.Fatal("rename not durable after dir sync")
	}
}

func TestLockExclusive(t *testing.T) {
	for name, fs := range map[string]FS{"mem": NewMem(), "os": Default} {
		t.Run(name, func(t *testing.T) {
			dir := "/lk"
			if name == "os" {
				dir = t.TempDir()
			} else {
				fs.MkdirAll(dir)
			}
			l, err := fs.Lock(Join(dir, "LOCK"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fs.Lock(Join(dir, "LOCK")); !errors.Is(err, ErrLocked) {
				t.Fatalf("second lock: %v", err)
			}
			l.Close()
			l2, err := fs.Lock(Join(dir, "LOCK"))
			if err != nil {
				t.Fatalf("relock after release: %v", err)
			}
			l2.Close()
		})
	}
}

func TestInjectFailsChosenOps(t *testing.T) {
	base := NewMem()
	base.MkdirAll("/d")
	fs := Inject(base, func(op Op, path string) error {
		if op == OpSync && path == "/d/bad" {
			return ENOSPC
		}
		return nil
	})
	f, _ := fs.Create("/d/bad")
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); !errors.Is(err, ENOSPC) {
		t.Fatalf("sync: %v", err)
	}
	g, _ := fs.Create("/d/good")
	if err := g.Sync(); err != nil {
		t.Fatal(err)
	}
}

func TestOSFileBasics(t *testing.T) {
	dir := t.TempDir()
	writeAll(t, Default, Join(dir, "f"), "abc", true)
	if got := readAll(t, Default, Join(dir, "f")); got != "abc" {
		t.Fatal(got)
	}
	names, err := Default.List(dir)
	if err != nil || len(names) != 1 || names[0] != "f" {
		t.Fatalf("%v %v", names, err)
	}
	if err := Default.Remove(Join(dir, "f")); err != nil {
		t.Fatal(err)
	}
	if _, err := Default.Open(Join(dir, "f")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
}

func TestMemCrashTailModes(t *testing.T) {
	fs := NewMem()
	fs.MkdirAll("/d")
	f, _ := fs.Create("/d/log")
	f.Write([]byte("hello"))
	f.Sync()
	f.Write([]byte(" world"))
	syncDir(t, fs, "/d")
	if got := readAll(t, fs.CrashClone(CrashOptions{Tail: TailZeroed}), "/d/log"); got != "hello\x00\x00\x00\x00\x00\x00" {
		t.Fatalf("zeroed: %q", got)
	}
	for seed := int64(0); seed < 20; seed++ {
		for _, mode := range []TailMode{TailZeroed, TailGarbage} {
			got := readAll(t, fs.CrashClone(CrashOptions{Rand: rand.New(rand.NewSource(seed)), Tail: mode}), "/d/log")
			if len(got) != len("hello world") || got[:5] != "hello" {
				t.Fatalf("seed %d mode %d: %q", seed, mode, got)
			}
		}
	}
}

func TestInjectShortWriteAndRead(t *testing.T) {
	base := NewMem()
	base.MkdirAll("/d")
	short := true
	fs := Inject(base, func(op Op, path string) error {
		switch {
		case op == OpWrite && short:
			return ShortWrite(ENOSPC)
		case op == OpRead && path == "/d/f":
			return EIO
		}
		return nil
	})
	f, _ := fs.Create("/d/f")
	n, err := f.Write([]byte("abcdef"))
	if n != 3 || !errors.Is(err, ENOSPC) {
		t.Fatalf("short write: n=%d err=%v", n, err)
	}
	short = false
	f.Sync()
	if got := readAll(t, base, "/d/f"); got != "abc" {
		t.Fatalf("persisted %q", got)
	}
	g, _ := fs.Open("/d/f")
	if _, err := io.ReadAll(g); !errors.Is(err, EIO) {
		t.Fatalf("read: %v", err)
	}
	if _, err := g.ReadAt(make([]byte, 1), 0); !errors.Is(err, EIO) {
		t.Fatalf("read at: %v", err)
	}
}
