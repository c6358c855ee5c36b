package lsm

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"testing"

	"github.com/seed84792017/cellcast/lsm/vfs"
)

const progressKey = "\xffprogress"

type crashOp struct {
	kind  Kind
	key   []byte
	value []byte
}

func replay(ops []crashOp) *model {
	m := newModel()
	for _, op := range ops {
		switch op.kind {
		case KindSet:
			m.set(op.key, op.value)
		case KindDelete:
			m.del(op.key)
		case KindMerge:
			m.merge(op.key, op.value)
		}
	}
	return m
}

// checkAgainst compares the whole DB with m, including keys m lacks.
func checkAgainst(t *testing.T, db *DB, m *model) {
	t.Helper()
	it, err := db.NewIter(&IterOptions{UpperBound: []byte(progressKey)})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		want, ok := m.get(it.Key())
		if !ok || !bytes.Equal(want, it.Value()) {
			t.Fatalf("key %s: db %q, model %q (present %v)", it.Key(), it.Value(), want, ok)
		}
		n++
	}
	if it.Error() != nil {
		t.Fatal(it.Error())
	}
	if n != len(m.m) {
		t.Fatalf("db has %d keys, model %d", n, len(m.m))
	}
}

// TestCrashRecovery crashes at random moments — with flushes and
// compactions in flight and torn unsynced tails — and checks that the
// reopened DB equals the model after some prefix of the operations that
// includes every synced one, and nothing else.
func TestCrashRecovery(t *testing.T) {
	trials := opsScale(12, 10)
	for trial := 0; trial < trials; trial++ {
		rng := rand.New(rand.NewSource(int64(100 + trial)))
		fs := vfs.NewMem()
		opts := smallOptions(fs)
		opts.MemTableSize = 64 << 10
		var ops []crashOp
		lastSynced := 0
		for gen := 0; gen < 4; gen++ {
			db, err := Open("/db", opts)
			if err != nil {
				t.Fatalf("trial %d gen %d: reopen after crash: %v", trial, gen, err)
			}
			p := 0
			if v, err := db.Get([]byte(progressKey)); err == nil {
				p, _ = strconv.Atoi(string(v))
			} else if !errors.Is(err, ErrNotFound) {
				t.Fatal(err)
			}
			if p < lastSynced || p > len(ops) {
				t.Fatalf("trial %d gen %d: recovered through op %d; synced through %d, wrote %d", trial, gen, p, lastSynced, len(ops))
			}
			ops = ops[:p]
			lastSynced = p
			checkAgainst(t, db, replay(ops))

			n := 500 + rng.Intn(3000)
			for i := 0; i < n; i++ {
				op := crashOp{kind: Kind(rng.Intn(3)), key: []byte(fmt.Sprintf("k%04d", rng.Intn(300)))}
				if op.kind != KindDelete {
					op.value = []byte(fmt.Sprintf("<%d>", len(ops)+1))
				}
				b := NewBatch()
				switch op.kind {
				case KindSet:
					b.Set(op.key, op.value)
				case KindDelete:
					b.Delete(op.key)
				case KindMerge:
					b.Merge(op.key, op.value)
				}
				ops = append(ops, op)
				b.Set([]byte(progressKey), []byte(strconv.Itoa(len(ops))))
				sync := rng.Intn(20) == 0
				if err := db.Apply(b, &WriteOptions{Sync: sync}); err != nil {
					t.Fatal(err)
				}
				if sync {
					lastSynced = len(ops)
				}
			}
			crashed := fs.CrashClone(vfs.CrashOptions{Rand: rng})
			db.Close()
			fs = crashed
			opts.FS = fs
		}
	}
}

// A clean Close keeps unsynced writes.
func TestCloseKeepsUnsyncedWrites(t *testing.T) {
	fs := vfs.NewMem()
	db := mustOpen(t, "/db", smallOptions(fs))
	m := newModel()
	for i := 0; i < 3000; i++ {
		k, v := []byte(fmt.Sprintf("k%04d", i%700)), []byte(strconv.Itoa(i))
		db.Merge(k, v, NoSync)
		m.merge(k, v)
	}
	db.Close()
	db = mustOpen(t, "/db", smallOptions(fs.CrashClone(vfs.CrashOptions{})))
	defer db.Close()
	checkAgainst(t, db, m)
}

// failAfter fails ops matching a suffix once armed.
type failAfter struct {
	armed  bool
	op     vfs.Op
	suffix string
	err    error
	hits   int
}

func (f *failAfter) inject(op vfs.Op, path string) error {
	if f.armed && op == f.op && bytes.Contains([]byte(path), []byte(f.suffix)) {
		f.hits++
		return f.err
	}
	return nil
}

func TestWriteErrorsAreStickyAndLoseNothingSynced(t *testing.T) {
	cases := []struct {
		name string
		op   vfs.Op
		suf  string
		err  error
	}{
		{"WAL write ENOSPC", vfs.OpWrite, ".log", vfs.ENOSPC},
		{"WAL sync EIO", vfs.OpSync, ".log", vfs.EIO},
		{"table sync EIO", vfs.OpSync, ".sst", vfs.EIO},
		{"table create ENOSPC", vfs.OpCreate, ".sst", vfs.ENOSPC},
		{"manifest sync EIO", vfs.OpSync, "MANIFEST-", vfs.EIO},
		{"CURRENT rename EIO", vfs.OpRename, "CURRENT", vfs.EIO},
		// Writes cut short: part of the data reaches the file.
		{"WAL short write", vfs.OpWrite, ".log", vfs.ShortWrite(vfs.ENOSPC)},
		{"table short write", vfs.OpWrite, ".sst", vfs.ShortWrite(vfs.ENOSPC)},
		{"manifest short write", vfs.OpWrite, "MANIFEST-", vfs.ShortWrite(vfs.ENOSPC)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := vfs.NewMem()
			inj := &failAfter{op: tc.op, suffix: tc.suf, err: tc.err}
			want := tc.err
			if errors.Is(tc.err, vfs.ENOSPC) {
				want = vfs.ENOSPC // a short write fails with the cause
			}
			opts := smallOptions(vfs.Inject(base, inj.inject))
			opts.MaxManifestFileSize = 256 // rotate often so CURRENT is rewritten
			db := mustOpen(t, "/db", opts)
			m := newModel()
			for i := 0; i < 100; i++ {
				k, v := []byte(fmt.Sprintf("k%04d", i)), []byte("before")
				if err := db.Set(k, v, Sync); err != nil {
					t.Fatal(err)
				}
				m.set(k, v)
			}
			inj.armed = true
			var firstErr error
			var failedKey []byte
			for i := 0; i < 20000 && firstErr == nil; i++ {
				k, v := []byte(fmt.Sprintf("k%04d", i%2000)), []byte(fmt.Sprintf("v%d", i))
				if err := db.Merge(k, v, Sync); err != nil {
					firstErr, failedKey = err, k
					break
				}
				m.merge(k, v)
			}
			if firstErr == nil {
				t.Fatalf("no write failed; injector hit %d times", inj.hits)
			}
			if !errors.Is(firstErr, ErrWritesRefused) {
				t.Fatalf("first error %v is not ErrWritesRefused", firstErr)
			}
			err := db.Set([]byte("later"), []byte("x"), Sync)
			if !errors.Is(err, ErrWritesRefused) || !errors.Is(err, want) {
				t.Fatalf("later write: %v; want sticky %v", err, want)
			}
			if err := db.Err(); !errors.Is(err, ErrWritesRefused) || !errors.Is(err, want) {
				t.Fatalf("Err() = %v; want sticky %v", err, want)
			}
			if n := db.Metrics().BackgroundErrors; n == 0 {
				t.Fatal("Metrics.BackgroundErrors is 0 after a failure")
			}
			// Reads keep working, and do not see the failed write.
			if _, err := db.Get([]byte("k0001")); err != nil {
				t.Fatalf("read after failure: %v", err)
			}
			had, ok := m.get(failedKey)
			if v, err := db.Get(failedKey); (err != nil) == ok || string(v) != string(had) {
				t.Fatalf("the failed write's key reads %q (%v), want %q", v, err, had)
			}
			db.Close()
			inj.armed = false
			// Every write was synced, so a crash now must keep them all.
			db = mustOpen(t, "/db", smallOptions(base.CrashClone(vfs.CrashOptions{})))
			defer db.Close()
			if err := db.Err(); err != nil {
				t.Fatalf("Err() after reopen: %v", err)
			}
			// The failed write itself may or may not have reached the log;
			// every acknowledged one did.
			it, err := db.NewIter(nil)
			if err != nil {
				t.Fatal(err)
			}
			defer it.Close()
			got := map[string][]byte{}
			for ok := it.First(); ok; ok = it.Next() {
				got[string(it.Key())] = append([]byte(nil), it.Value()...)
			}
			for k, want := range m.m {
				v := got[k]
				if !bytes.Equal(v, want) && !bytes.HasSuffix(v, want) {
					t.Fatalf("key %s after reopen: %q, want %q", k, v, want)
				}
			}
		})
	}
}

func TestCorruptTableBlockIsReportedAndOtherKeysServed(t *testing.T) {
	fs := vfs.NewMem()
	opts := smallOptions(fs)
	db := mustOpen(t, "/db", opts)
	for i := 0; i < 5000; i++ {
		db.Set([]byte(fmt.Sprintf("k%05d", i)), bytes.Repeat([]byte{byte(i)}, 50), nil)
	}
	db.Compact(t.Context(), nil, nil)
	db.Close()
	names, _ := fs.List("/db")
	var table string
	for _, n := range names {
		if bytes.HasSuffix([]byte(n), []byte(".sst")) {
			table = "/db/" + n
			break
		}
	}
	data, _ := readFile(fs, table)
	data[200] ^= 0xff // inside the first data block
	f, _ := fs.Create(table)
	f.Write(data)
	f.Sync()
	f.Close()

	db = mustOpen(t, "/db", opts)
	defer db.Close()
	var ce *CorruptionError
	bad, good := 0, 0
	for i := 0; i < 5000; i += 7 {
		_, err := db.Get([]byte(fmt.Sprintf("k%05d", i)))
		switch {
		case err == nil:
			good++
		case errors.As(err, &ce):
			if ce.File != table || ce.Offset != 0 {
				t.Fatalf("corruption reported at %s:%d, want %s:0", ce.File, ce.Offset, table)
			}
			bad++
		default:
			t.Fatalf("unexpected error %v", err)
		}
	}
	if bad == 0 || good == 0 {
		t.Fatalf("bad %d good %d: want both", bad, good)
	}
}

func TestWALCorruptionVersusTornTail(t *testing.T) {
	write := func() (*vfs.MemFS, string) {
		fs := vfs.NewMem()
		db := mustOpen(t, "/db", &Options{FS: fs, Logger: quietLogger})
		for i := 0; i < 2000; i++ {
			db.Set([]byte(fmt.Sprintf("k%05d", i)), bytes.Repeat([]byte("v"), 40), nil)
		}
		db.Close()
		names, _ := fs.List("/db")
		for _, n := range names {
			if bytes.HasSuffix([]byte(n), []byte(".log")) {
				if data, _ := readFile(fs, "/db/"+n); len(data) > 0 {
					return fs, "/db/" + n
				}
			}
		}
		t.Fatal("no WAL with data")
		return nil, ""
	}
	rewrite := func(fs vfs.FS, path string, data []byte) {
		f, _ := fs.Create(path)
		f.Write(data)
		f.Sync()
		f.Close()
	}

	fs, wal := write()
	data, _ := readFile(fs, wal)
	rewrite(fs, wal, data[:len(data)-10])
	db, err := Open("/db", &Options{FS: fs, Logger: quietLogger})
	if err != nil {
		t.Fatalf("torn tail refused: %v", err)
	}
	if _, err := db.Get([]byte("k01998")); err != nil {
		t.Fatalf("record before the torn one lost: %v", err)
	}
	if _, err := db.Get([]byte("k01999")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("torn record replayed: %v", err)
	}
	db.Close()

	fs, wal = write()
	data, _ = readFile(fs, wal)
	// Each record is 68 bytes (7 header + 61 batch), so byte 100 lies in
	// the second record, which starts at 68.
	data[100] ^= 0x01
	rewrite(fs, wal, data)
	_, err = Open("/db", &Options{FS: fs, Logger: quietLogger})
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.File != wal || ce.Offset != 68 {
		t.Fatalf("mid-WAL corruption: %v", err)
	}
}

func TestSecondOpenerIsRefused(t *testing.T) {
	for name, fs := range map[string]vfs.FS{"mem": vfs.NewMem(), "os": vfs.Default} {
		t.Run(name, func(t *testing.T) {
			dir := "/db"
			if name == "os" {
				dir = t.TempDir()
			}
			db := mustOpen(t, dir, &Options{FS: fs, Logger: quietLogger})
			if _, err := Open(dir, &Options{FS: fs, Logger: quietLogger}); !errors.Is(err, ErrLocked) {
				t.Fatalf("second open: %v", err)
			}
			db.Close()
			db = mustOpen(t, dir, &Options{FS: fs, Logger: quietLogger})
			db.Close()
		})
	}
}

func TestBadInputIsRefusedAndNothingWritten(t *testing.T) {
	db := mustOpen(t, "/db", &Options{FS: vfs.NewMem(), Logger: quietLogger})
	defer db.Close()
	big := make([]byte, MaxKeySize+1)
	if err := db.Set(big, []byte("v"), nil); !errors.Is(err, ErrKeyTooLarge) {
		t.Fatalf("big key: %v", err)
	}
	if err := db.Set(nil, []byte("v"), nil); !errors.Is(err, ErrEmptyKey) {
		t.Fatalf("empty key: %v", err)
	}
	b := NewBatch()
	b.Set([]byte("a"), []byte("1"))
	if err := b.Merge([]byte("b"), make([]byte, MaxValueSize+1)); !errors.Is(err, ErrValueTooLarge) {
		t.Fatalf("big value: %v", err)
	}
	if b.Count() != 1 {
		t.Fatalf("refused entry was added: count %d", b.Count())
	}
	if _, err := db.Get(big[:10]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("something was written: %v", err)
	}
	if _, err := Open("/x", &Options{FS: vfs.NewMem(), LevelMultiplier: 1}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("bad options: %v", err)
	}
}

func TestMergerMismatchRefused(t *testing.T) {
	fs := vfs.NewMem()
	db := mustOpen(t, "/db", &Options{FS: fs, Logger: quietLogger})
	db.Close()
	other := &Merger{Name: "other", Merge: ConcatMerger.Merge}
	if _, err := Open("/db", &Options{FS: fs, Merger: other}); !errors.Is(err, ErrMergerMismatch) {
		t.Fatalf("open with another merger: %v", err)
	}
}

// A reader released after Close must not delete the final version's tables.
func TestReaderOutlivingCloseKeepsTables(t *testing.T) {
	fs := vfs.NewMem()
	db := mustOpen(t, "/db", smallOptions(fs))
	for i := 0; i < 3000; i++ {
		db.Set([]byte(fmt.Sprintf("k%05d", i)), bytes.Repeat([]byte("v"), 50), nil)
	}
	db.Compact(t.Context(), nil, nil)
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	it.Close()
	db = mustOpen(t, "/db", smallOptions(fs))
	defer db.Close()
	for i := 0; i < 3000; i += 97 {
		if _, err := db.Get([]byte(fmt.Sprintf("k%05d", i))); err != nil {
			t.Fatalf("k%05d after reopen: %v", i, err)
		}
	}
}
