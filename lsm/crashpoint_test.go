package lsm

import (
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seed84792017/cellcast/lsm/vfs"
)

// crashPoints wraps a MemFS and, just before each chosen file-system
// operation (create, write, sync, rename, remove; counted from 1), takes
// the file system a crash at that moment would leave, with the writer's
// progress at that moment.
type crashPoints struct {
	mem *vfs.MemFS
	// at chooses the ops to crash at; nil counts only.
	at func(n int, path string) bool
	// synced and issued are the writer's progress: ops acknowledged as
	// synced, and ops handed to Apply.
	synced, issued atomic.Int64

	mu    sync.Mutex
	ops   int
	snaps []crashSnap
}

type crashSnap struct {
	op             int
	path           string // the file of the op that did not happen
	fs             *vfs.MemFS
	synced, issued int
	tail           vfs.TailMode
}

func (c *crashPoints) inject(op vfs.Op, path string) error {
	if op == vfs.OpRead {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ops++
	if c.at == nil || !c.at(c.ops, path) {
		return nil
	}
	// Progress first: whatever was acknowledged before the clone is in it.
	s := crashSnap{op: c.ops, path: path, synced: int(c.synced.Load()), issued: int(c.issued.Load())}
	opts := vfs.CrashOptions{}
	switch c.ops % 4 {
	case 1: // a random part of each unsynced tail survives
		opts.Rand = rand.New(rand.NewSource(int64(c.ops)))
	case 2:
		opts.Rand, opts.Tail = rand.New(rand.NewSource(int64(c.ops))), vfs.TailZeroed
	case 3:
		opts.Rand, opts.Tail = rand.New(rand.NewSource(int64(c.ops))), vfs.TailGarbage
	}
	s.tail = opts.Tail
	s.fs = c.mem.CrashClone(opts)
	c.snaps = append(c.snaps, s)
	return nil
}

// crashOptions makes flushes and compactions frequent: the smallest
// memtable, small tables and levels, compaction at two L0 files.
func crashOptions(fs vfs.FS) *Options {
	o := smallOptions(fs)
	o.TargetFileSize = 4 << 10
	o.LBaseMaxBytes = 16 << 10
	o.BlockSize = 512
	return o
}

// crashWorkload writes n random ops, one batch each with the progress key,
// syncing one in eight, with a manual compaction halfway, and returns them.
func crashWorkload(t *testing.T, seed int64, n int, c *crashPoints) ([]crashOp, *Metrics) {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	db := mustOpen(t, "/db", crashOptions(vfs.Inject(c.mem, c.inject)))
	pad := strings.Repeat(".", 120)
	var ops []crashOp
	for i := 0; i < n; i++ {
		op := crashOp{kind: Kind(rng.Intn(3)), key: []byte(fmt.Sprintf("k%03d", rng.Intn(250)))}
		if op.kind != KindDelete {
			op.value = []byte(fmt.Sprintf("<%d%s>", len(ops)+1, pad[:rng.Intn(len(pad))]))
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
		c.issued.Store(int64(len(ops)))
		sync := rng.Intn(8) == 0
		if err := db.Apply(b, &WriteOptions{Sync: sync}); err != nil {
			t.Fatal(err)
		}
		if sync {
			c.synced.Store(int64(len(ops)))
		}
		if i == n/2 {
			// Background compactions depend on timing; this one does not,
			// so every run has crash points inside a compaction.
			if err := db.Compact(t.Context(), nil, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	m := db.Metrics()
	// Stop the clock before Close: its syncs are no crash point of the run.
	c.mu.Lock()
	c.at = nil
	c.mu.Unlock()
	db.Close()
	return ops, m
}

// TestCrashAtEveryFSOp crashes the engine at hundreds of distinct points —
// the Nth file-system operation of a run with flushes and compactions in
// flight — leaving each file's unsynced tail dropped, partly kept, zeroed
// or garbage. Each reopened DB must equal the model after a prefix of the
// ops that holds every op acknowledged as synced before the crash and no
// op not yet issued: nothing synced lost, nothing deleted or overwritten
// brought back.
func TestCrashAtEveryFSOp(t *testing.T) {
	runs, perRun := 1, 250
	if testing.Short() {
		perRun = 100
	}
	if *longTests {
		runs, perRun = 5, 300
	}
	total, onTables, onManifest := 0, 0, 0
	for run := 0; run < runs; run++ {
		seed := int64(7000 + run)
		n := 3000
		// Count the run's ops, then crash at evenly spread ones, and at
		// every op of a flush, compaction or manifest update (all but WAL
		// ops). Background work makes the order vary a little between
		// runs; every chosen count is still a distinct crash point.
		dry := &crashPoints{mem: vfs.NewMem()}
		crashWorkload(t, seed, n, dry)
		stride := max(1, dry.ops/perRun)
		c := &crashPoints{mem: vfs.NewMem(), at: func(op int, path string) bool {
			return op%stride == 0 || !strings.HasSuffix(path, ".log")
		}}
		ops, m := crashWorkload(t, seed, n, c)
		if m.FlushCount == 0 || m.CompactCount == 0 {
			t.Fatalf("run %d: %d flushes, %d compactions; the workload must do both", run, m.FlushCount, m.CompactCount)
		}
		for _, s := range c.snaps {
			checkCrash(t, s, ops)
			if strings.HasSuffix(s.path, ".sst") {
				onTables++
			}
			if strings.Contains(s.path, "MANIFEST") || strings.Contains(s.path, "CURRENT") {
				onManifest++
			}
		}
		total += len(c.snaps)
	}
	minPoints := 100
	if *longTests {
		minPoints = 1000
	}
	if total < minPoints || onTables == 0 || onManifest == 0 {
		t.Fatalf("%d crash points (%d in table writes, %d in manifest updates); want ≥%d and some of each", total, onTables, onManifest, minPoints)
	}
	t.Logf("%d crash points, %d during table writes (flush or compaction), %d during manifest updates", total, onTables, onManifest)
}

func checkCrash(t *testing.T, s crashSnap, ops []crashOp) {
	t.Helper()
	db, err := Open("/db", crashOptions(s.fs))
	if err != nil {
		t.Fatalf("crash before op %d (%s, tail %d): reopen: %v", s.op, s.path, s.tail, err)
	}
	defer db.Close()
	p := 0
	if v, err := db.Get([]byte(progressKey)); err == nil {
		p, _ = strconv.Atoi(string(v))
	} else if !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	if p < s.synced || p > s.issued {
		t.Fatalf("crash before op %d (%s, tail %d): recovered through op %d; synced through %d, issued %d", s.op, s.path, s.tail, p, s.synced, s.issued)
	}
	checkAgainst(t, db, replay(ops[:p]))
}
