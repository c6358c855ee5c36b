package lsm

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/seed84792017/cellcast/lsm/vfs"
)

// rewriteFile replaces a file's contents durably.
func rewriteFile(t *testing.T, fs vfs.FS, path string, data []byte) {
	t.Helper()
	f, err := fs.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// filesWithSuffix lists dir's files ending in suffix, as paths, in order.
func filesWithSuffix(t *testing.T, fs vfs.FS, dir, suffix string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, suffix) || (suffix == "MANIFEST" && strings.HasPrefix(n, "MANIFEST-")) {
			out = append(out, vfs.Join(dir, n))
		}
	}
	return out
}

// walWithRecords writes n keys without syncing, closes the DB and returns
// the file system and the WAL that holds them.
func walWithRecords(t *testing.T, n int) (*vfs.MemFS, string) {
	t.Helper()
	fs := vfs.NewMem()
	db := mustOpen(t, "/db", &Options{FS: fs, Logger: quietLogger})
	for i := 0; i < n; i++ {
		if err := db.Set([]byte(fmt.Sprintf("k%05d", i)), bytes.Repeat([]byte("v"), 40), nil); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	for _, p := range filesWithSuffix(t, fs, "/db", ".log") {
		if data, _ := readFile(fs, p); len(data) > 0 {
			return fs, p
		}
	}
	t.Fatal("no WAL with records")
	return nil, ""
}

// Only the last WAL with records may end torn: an older one was synced and
// closed before its successor got a record, so its torn tail is lost
// synced data, reported with file and offset. Followed by an empty WAL
// (a crash during the memtable switch) it is an ordinary torn tail.
func TestTornOlderWALIsCorruptionOnlyIfANewerOneHasRecords(t *testing.T) {
	for _, newerHasRecords := range []bool{true, false} {
		t.Run(fmt.Sprintf("newer has records %v", newerHasRecords), func(t *testing.T) {
			fs, wal := walWithRecords(t, 200)
			data, _ := readFile(fs, wal)
			rewriteFile(t, fs, wal, data[:len(data)-10])
			_, num, _ := parseFilename(wal[len("/db/"):])
			newer := makeFilename(fs, "/db", fileTypeLog, num+100)
			if newerHasRecords {
				rewriteFile(t, fs, newer, data) // the same batches again: harmless to replay
			} else {
				rewriteFile(t, fs, newer, nil)
			}
			db, err := Open("/db", &Options{FS: fs, Logger: quietLogger})
			if !newerHasRecords {
				if err != nil {
					t.Fatalf("torn tail before an empty WAL refused: %v", err)
				}
				defer db.Close()
				if _, err := db.Get([]byte("k00198")); err != nil {
					t.Fatalf("record before the torn one: %v", err)
				}
				return
			}
			var ce *CorruptionError
			if !errors.As(err, &ce) || ce.File != wal || ce.Offset != int64(len(data)-68) {
				t.Fatalf("open: %v; want corruption in %s at %d", err, wal, len(data)-68)
			}
		})
	}
}

// dbWithTables writes n keys through flushes and compactions into tables
// at several levels and closes the DB, leaving a MANIFEST of many edits.
func dbWithTables(t *testing.T, n int) *vfs.MemFS {
	t.Helper()
	fs := vfs.NewMem()
	db := mustOpen(t, "/db", smallOptions(fs))
	for i := 0; i < n; i++ {
		if err := db.Set([]byte(fmt.Sprintf("k%05d", i)), bytes.Repeat([]byte{'a' + byte(i%26)}, 50), nil); err != nil {
			t.Fatal(err)
		}
		if i == n/2 {
			if err := db.Compact(t.Context(), nil, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	return fs
}

func checkAllKeys(t *testing.T, db *DB, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		v, err := db.Get([]byte(fmt.Sprintf("k%05d", i)))
		if err != nil || !bytes.Equal(v, bytes.Repeat([]byte{'a' + byte(i%26)}, 50)) {
			t.Fatalf("k%05d: %q, %v", i, v, err)
		}
	}
}

// A damaged MANIFEST — a flipped byte anywhere, a truncation anywhere,
// garbage, nothing — either opens with every table (the damage hit only
// padding, or cut a tail edit nothing acted on) or fails with a
// *CorruptionError naming the MANIFEST. It never panics and never opens
// with tables or writes silently gone.
func TestManifestCorruptionIsReportedNeverSilent(t *testing.T) {
	const n = 6000
	clean := dbWithTables(t, n)
	manifests := filesWithSuffix(t, clean, "/db", "MANIFEST")
	if len(manifests) != 1 {
		t.Fatalf("manifests %v", manifests)
	}
	path := manifests[0]
	orig, err := readFile(clean, path)
	if err != nil {
		t.Fatal(err)
	}
	type mutation struct {
		name string
		data []byte
	}
	var muts []mutation
	step := max(1, len(orig)/60)
	for off := 0; off < len(orig); off += step {
		d := append([]byte(nil), orig...)
		d[off] ^= 0x10
		muts = append(muts, mutation{fmt.Sprintf("flip %d", off), d})
		muts = append(muts, mutation{fmt.Sprintf("truncate %d", off), append([]byte(nil), orig[:off]...)})
	}
	garbage := make([]byte, len(orig))
	for i := range garbage {
		garbage[i] = byte(i*7 + 3)
	}
	muts = append(muts, mutation{"garbage", garbage}, mutation{"empty", nil},
		mutation{"zeroed", make([]byte, len(orig))})
	var refused, opened int
	for _, m := range muts {
		fs := clean.CrashClone(vfs.CrashOptions{})
		rewriteFile(t, fs, path, m.data)
		db, err := Open("/db", smallOptions(fs))
		if err != nil {
			var ce *CorruptionError
			if !errors.As(err, &ce) || ce.File != path {
				t.Fatalf("%s: %v; want a *CorruptionError naming %s", m.name, err, path)
			}
			refused++
			continue
		}
		opened++
		checkAllKeys(t, db, n)
		db.Close()
	}
	if refused == 0 {
		t.Fatal("no mutation was refused")
	}
	t.Logf("%d mutations refused, %d opened intact", refused, opened)
}

// A CURRENT naming a missing or bogus MANIFEST is refused with an error
// naming the file.
func TestCurrentNamingNoManifestIsRefused(t *testing.T) {
	for _, content := range []string{"MANIFEST-999999\n", "bogus\n", ""} {
		fs := dbWithTables(t, 100)
		rewriteFile(t, fs, "/db/CURRENT", []byte(content))
		_, err := Open("/db", smallOptions(fs))
		if err == nil || !strings.Contains(err.Error(), "/db/") {
			t.Fatalf("CURRENT %q: %v", content, err)
		}
	}
}

// failReads fails reads of paths with the suffix while armed.
type failReads struct {
	mu     sync.Mutex
	armed  bool
	suffix string
}

func (f *failReads) set(armed bool, suffix string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed, f.suffix = armed, suffix
}

func (f *failReads) inject(op vfs.Op, path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.armed && op == vfs.OpRead && strings.HasSuffix(path, f.suffix) {
		return vfs.EIO
	}
	return nil
}

// A read error on one table fails the reads that need that table with the
// device's error (not a corruption report), serves every other key, and
// leaves the DB healthy: the table is fine once the device is.
func TestTableReadEIO(t *testing.T) {
	const n = 6000
	base := dbWithTables(t, n)
	tables := filesWithSuffix(t, base, "/db", ".sst")
	if len(tables) < 3 {
		t.Fatalf("only %d tables", len(tables))
	}
	inj := &failReads{}
	db := mustOpen(t, "/db", smallOptions(vfs.Inject(base, inj.inject)))
	defer db.Close()
	inj.set(true, tables[len(tables)/2])
	bad, good := 0, 0
	for i := 0; i < n; i++ {
		k := []byte(fmt.Sprintf("k%05d", i))
		v, err := db.Get(k)
		switch {
		case err == nil:
			if !bytes.Equal(v, bytes.Repeat([]byte{'a' + byte(i%26)}, 50)) {
				t.Fatalf("%s: %q", k, v)
			}
			good++
		case errors.Is(err, vfs.EIO):
			if errors.Is(err, ErrCorruption) {
				t.Fatalf("%s: a read error reported as corruption: %v", k, err)
			}
			if !strings.Contains(err.Error(), tables[len(tables)/2]) {
				t.Fatalf("%s: error does not name the table: %v", k, err)
			}
			bad++
		default:
			t.Fatalf("%s: %v", k, err)
		}
	}
	if bad == 0 || good == 0 {
		t.Fatalf("bad %d good %d: want both", bad, good)
	}
	if err := db.Err(); err != nil {
		t.Fatalf("a failed read made the DB unhealthy: %v", err)
	}
	inj.set(false, "")
	checkAllKeys(t, db, n)
}

// A read error while a compaction reads its inputs stops background work
// with a sticky error; nothing is lost, and a reopen serves every key.
func TestCompactionReadEIOIsStickyAndLosesNothing(t *testing.T) {
	const n = 3000
	base := dbWithTables(t, n)
	inj := &failReads{}
	db := mustOpen(t, "/db", smallOptions(vfs.Inject(base, inj.inject)))
	inj.set(true, ".sst")
	err := db.Compact(t.Context(), nil, nil)
	if !errors.Is(err, vfs.EIO) {
		t.Fatalf("compaction over unreadable tables: %v", err)
	}
	if err := db.Err(); !errors.Is(err, ErrWritesRefused) || !errors.Is(err, vfs.EIO) {
		t.Fatalf("Err() after a failed compaction: %v", err)
	}
	inj.set(false, "")
	db.Close()
	db = mustOpen(t, "/db", smallOptions(base.CrashClone(vfs.CrashOptions{})))
	defer db.Close()
	checkAllKeys(t, db, n)
}

// A read error on the WAL or the MANIFEST during recovery fails Open with
// that error, naming the file; once the device reads again, Open recovers
// everything.
func TestRecoveryReadEIO(t *testing.T) {
	for _, suffix := range []string{".log", "MANIFEST", "CURRENT"} {
		t.Run(suffix, func(t *testing.T) {
			fs := vfs.NewMem()
			db := mustOpen(t, "/db", smallOptions(fs))
			for i := 0; i < 3000; i++ {
				if err := db.Set([]byte(fmt.Sprintf("k%05d", i)), bytes.Repeat([]byte{'a' + byte(i%26)}, 50), Sync); err != nil {
					t.Fatal(err)
				}
			}
			crashed := fs.CrashClone(vfs.CrashOptions{})
			db.Close()
			inj := &failReads{}
			inj.set(true, "")
			files := filesWithSuffix(t, crashed, "/db", suffix)
			if len(files) == 0 {
				t.Fatalf("no %s file", suffix)
			}
			inj.set(true, files[len(files)-1])
			_, err := Open("/db", smallOptions(vfs.Inject(crashed, inj.inject)))
			if !errors.Is(err, vfs.EIO) || !strings.Contains(err.Error(), files[len(files)-1]) {
				t.Fatalf("open with unreadable %s: %v", files[len(files)-1], err)
			}
			inj.set(false, "")
			db = mustOpen(t, "/db", smallOptions(vfs.Inject(crashed, inj.inject)))
			defer db.Close()
			checkAllKeys(t, db, 3000)
		})
	}
}
