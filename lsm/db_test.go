package lsm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"sync"
	"testing"

	"github.com/seed84792017/cellcast/lsm/vfs"
)

func smallOptions(fs vfs.FS) *Options {
	return &Options{
		FS: fs, Logger: quietLogger, MemTableSize: 64 << 10, TargetFileSize: 32 << 10, LBaseMaxBytes: 128 << 10,
		BlockSize: 1 << 10, BlockCacheSize: 256 << 10, L0CompactionThreshold: 2,
		L0SlowdownWritesThreshold: 4, L0StopWritesThreshold: 8, CompactConcurrency: 4,
	}
}

var quietLogger = slog.New(slog.DiscardHandler)

// warnLog collects engine warnings so tests can require there were none.
type warnLog struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnLog) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
	w.msgs = append(w.msgs, msg)
	return nil
}
func (w *warnLog) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnLog) WithGroup(string) slog.Handler      { return w }

func mustOpen(t testing.TB, dir string, o *Options) *DB {
	t.Helper()
	db, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

type diffRun struct {
	t        *testing.T
	rng      *rand.Rand
	db       *DB
	fs       vfs.FS
	opts     *Options
	m        *model
	filter   *expiryFilter
	now      uint64
	snaps    []*Snapshot
	snapMods []*model
	keySpace int
	// slicedL0 is set once L0 was seen holding a sublevel of more than
	// one table: flushes were cut into slices.
	slicedL0 bool
}

// noteL0 records whether L0 holds a sublevel of several tables.
func (r *diffRun) noteL0() {
	r.db.mu.Lock()
	defer r.db.mu.Unlock()
	v := r.db.vs.current
	r.slicedL0 = r.slicedL0 || v.NumFiles(0) > v.L0Depth()
}

func (r *diffRun) key() []byte {
	// Skewed: a few hot keys collect long lists.
	n := r.rng.Intn(r.keySpace)
	if r.rng.Intn(4) == 0 {
		n = r.rng.Intn(8)
	}
	return []byte(fmt.Sprintf("key%05d", n))
}

func (r *diffRun) value() []byte {
	var v []byte
	for i := 0; i <= r.rng.Intn(3); i++ {
		exp := r.now + uint64(r.rng.Intn(200))
		v = append(v, expRecord(exp, fmt.Sprintf("p%d", r.rng.Intn(1000)))...)
	}
	return v
}

func (r *diffRun) checkGet(view interface {
	Get([]byte) ([]byte, error)
}, m *model, k []byte) {
	got, err := view.Get(k)
	want, ok := m.get(k)
	filtered := r.filter != nil
	if errors.Is(err, ErrNotFound) {
		if ok && !(filtered && len(liveRecords(want, r.now)) == 0) {
			r.t.Fatalf("Get(%s): not found, model has %x", k, want)
		}
		return
	}
	if err != nil {
		r.t.Fatalf("Get(%s): %v", k, err)
	}
	if !ok && !(filtered && len(liveRecords(got, r.now)) == 0) {
		r.t.Fatalf("Get(%s) = %x, model has nothing", k, got)
	}
	if !equalLive(got, want, filtered, r.now) {
		r.t.Fatalf("Get(%s):\n got %x\nwant %x", k, got, want)
	}
}

func (r *diffRun) checkScan() {
	lo := r.key()
	hi := append(append([]byte(nil), lo...), 0xff)
	if r.rng.Intn(2) == 0 {
		hi = []byte(fmt.Sprintf("key%05d", r.rng.Intn(r.keySpace)+50))
	}
	if bytes.Compare(lo, hi) > 0 {
		lo, hi = hi, lo
	}
	it, err := r.db.NewIter(&IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		r.t.Fatal(err)
	}
	defer it.Close()
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		if r.filter != nil && len(liveRecords(it.Value(), r.now)) == 0 {
			continue
		}
		want, _ := r.m.get(it.Key())
		if !equalLive(it.Value(), want, r.filter != nil, r.now) {
			r.t.Fatalf("scan value for %s:\n got %x\nwant %x", it.Key(), it.Value(), want)
		}
		got = append(got, string(it.Key()))
	}
	if err := it.Error(); err != nil {
		r.t.Fatal(err)
	}
	var want []string
	for _, k := range r.m.keysIn(lo, hi) {
		if r.filter != nil && len(liveRecords(r.m.m[k], r.now)) == 0 {
			continue
		}
		want = append(want, k)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		r.t.Fatalf("scan [%s,%s):\n got %v\nwant %v", lo, hi, got, want)
	}
}

// checkVisits: concatenating a key's visited fragments gives Get's value,
// and the range visit agrees key by key.
func (r *diffRun) checkVisits() {
	k := r.key()
	var cat []byte
	levels := []int{}
	if err := r.db.VisitKey(k, nil, func(f *Fragment) VisitDecision {
		cat = append(cat, f.Value...)
		levels = append(levels, f.Level)
		return VisitContinue
	}); err != nil {
		r.t.Fatal(err)
	}
	for i := 1; i < len(levels); i++ {
		if levels[i] < levels[i-1] {
			r.t.Fatalf("VisitKey(%s) went from level %d up to %d", k, levels[i-1], levels[i])
		}
	}
	got, err := r.db.Get(k)
	if err != nil && !errors.Is(err, ErrNotFound) {
		r.t.Fatal(err)
	}
	if !equalLive(cat, got, r.filter != nil, r.now) {
		r.t.Fatalf("VisitKey(%s) fragments %x, Get %x", k, cat, got)
	}
	// Stopping after the first fragment yields a prefix.
	var first []byte
	r.db.VisitKey(k, nil, func(f *Fragment) VisitDecision { first = append([]byte(nil), f.Value...); return VisitStop })
	if r.filter == nil && !bytes.HasPrefix(got, first) {
		r.t.Fatalf("first fragment %x is not a prefix of %x", first, got)
	}

	lo := []byte(fmt.Sprintf("key%05d", r.rng.Intn(r.keySpace)))
	hi := []byte(fmt.Sprintf("key%05d", r.rng.Intn(r.keySpace)+20))
	byKey := map[string][]byte{}
	if err := r.db.VisitRange(lo, hi, nil, func(f *Fragment) VisitDecision {
		if bytes.Compare(f.Key, lo) < 0 || bytes.Compare(f.Key, hi) >= 0 {
			r.t.Fatalf("VisitRange [%s,%s) visited %s", lo, hi, f.Key)
		}
		byKey[string(f.Key)] = append(byKey[string(f.Key)], f.Value...)
		return VisitContinue
	}); err != nil {
		r.t.Fatal(err)
	}
	for _, key := range r.m.keysIn(lo, hi) {
		want, _ := r.db.Get([]byte(key))
		if !equalLive(byKey[key], want, r.filter != nil, r.now) {
			r.t.Fatalf("VisitRange fragments of %s: %x, Get %x", key, byKey[key], want)
		}
		delete(byKey, key)
	}
	for key, v := range byKey {
		if r.filter == nil || len(liveRecords(v, r.now)) > 0 {
			if _, err := r.db.Get([]byte(key)); !errors.Is(err, ErrNotFound) || r.filter == nil {
				r.t.Fatalf("VisitRange visited %s (%x) which the model lacks", key, v)
			}
		}
	}
	if r.filter != nil {
		return
	}
	// Skipping every key at its first fragment visits each key once, at
	// its newest fragment: a prefix of its value.
	newest := map[string][]byte{}
	if err := r.db.VisitRange(lo, hi, nil, func(f *Fragment) VisitDecision {
		if _, again := newest[string(f.Key)]; again {
			r.t.Fatalf("VisitRange visited %s again after VisitSkipKey", f.Key)
		}
		newest[string(f.Key)] = append([]byte(nil), f.Value...)
		return VisitSkipKey
	}); err != nil {
		r.t.Fatal(err)
	}
	for _, key := range r.m.keysIn(lo, hi) {
		want, _ := r.db.Get([]byte(key))
		first, ok := newest[key]
		if !ok || !bytes.HasPrefix(want, first) || len(want) > 0 && len(first) == 0 {
			r.t.Fatalf("VisitRange skipping keys: %s's first fragment %x (visited %v), value %x", key, first, ok, want)
		}
		delete(newest, key)
	}
	if len(newest) > 0 {
		r.t.Fatalf("VisitRange skipping keys visited %d keys the model lacks", len(newest))
	}
}

func (r *diffRun) reopen() {
	for _, s := range r.snaps {
		s.Close()
	}
	r.snaps, r.snapMods = nil, nil
	if err := r.db.Close(); err != nil {
		r.t.Fatal(err)
	}
	r.db = mustOpen(r.t, "/db", r.opts)
}

func runDifferential(t *testing.T, seed int64, ops int, withFilter bool) {
	fs := vfs.NewMem()
	r := &diffRun{t: t, rng: rand.New(rand.NewSource(seed)), fs: fs, m: newModel(), keySpace: 2000, now: 1000}
	r.opts = smallOptions(fs)
	warns := &warnLog{}
	r.opts.Logger = slog.New(warns)
	defer func() {
		if len(warns.msgs) > 0 {
			t.Errorf("engine warnings: %v", warns.msgs[:min(5, len(warns.msgs))])
		}
	}()
	if withFilter {
		r.filter = &expiryFilter{}
		r.filter.now.Store(r.now)
		r.opts.CompactionFilter = r.filter
	}
	r.db = mustOpen(t, "/db", r.opts)
	defer func() { r.db.Close() }()
	for i := 0; i < ops; i++ {
		switch p := r.rng.Intn(1000); {
		case p < 350:
			k, v := r.key(), r.value()
			if err := r.db.Merge(k, v, nil); err != nil {
				t.Fatal(err)
			}
			r.m.merge(k, v)
		case p < 500:
			k, v := r.key(), r.value()
			if err := r.db.Set(k, v, nil); err != nil {
				t.Fatal(err)
			}
			r.m.set(k, v)
		case p < 560:
			k := r.key()
			if err := r.db.Delete(k, nil); err != nil {
				t.Fatal(err)
			}
			r.m.del(k)
		case p < 600:
			// A multi-entry batch is atomic and ordered.
			b := NewBatch()
			for j := 0; j < 1+r.rng.Intn(10); j++ {
				k, v := r.key(), r.value()
				if r.rng.Intn(2) == 0 {
					b.Merge(k, v)
					r.m.merge(k, v)
				} else {
					b.Set(k, v)
					r.m.set(k, v)
				}
			}
			if err := r.db.Apply(b, nil); err != nil {
				t.Fatal(err)
			}
		case p < 850:
			r.checkGet(r.db, r.m, r.key())
		case p < 870:
			r.checkScan()
		case p < 890:
			r.checkVisits()
		case p < 900:
			if len(r.snaps) < 3 {
				r.snaps = append(r.snaps, r.db.NewSnapshot())
				r.snapMods = append(r.snapMods, r.m.clone())
			} else {
				j := r.rng.Intn(len(r.snaps))
				r.snaps[j].Close()
				r.snaps = append(r.snaps[:j], r.snaps[j+1:]...)
				r.snapMods = append(r.snapMods[:j], r.snapMods[j+1:]...)
			}
		case p < 950:
			if len(r.snaps) > 0 {
				j := r.rng.Intn(len(r.snaps))
				r.checkGet(r.snaps[j], r.snapMods[j], r.key())
			}
		case p < 960:
			if withFilter {
				r.now += uint64(r.rng.Intn(20))
				r.filter.now.Store(r.now)
			}
		case p < 970:
			if err := r.db.Flush(); err != nil {
				t.Fatal(err)
			}
			r.noteL0()
		case p < 973:
			if err := r.db.Compact(context.Background(), nil, nil); err != nil {
				t.Fatal(err)
			}
		case p < 976:
			r.reopen()
		}
	}
	if !r.slicedL0 {
		t.Error("no flush was cut into slices: L0 sublevels went untested")
	}
	// Final full check.
	for k := range r.m.m {
		r.checkGet(r.db, r.m, []byte(k))
	}
	if err := r.db.Compact(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	for k := range r.m.m {
		r.checkGet(r.db, r.m, []byte(k))
	}
	t.Logf("seed %d: %d ops\n%s", seed, ops, r.db.Metrics())
}

func TestDifferentialPlain(t *testing.T) {
	runDifferential(t, 1, opsScale(100000, 10), false)
}

func TestDifferentialExpiryFilter(t *testing.T) {
	runDifferential(t, 2, opsScale(60000, 10), true)
}
