package lsm

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
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
