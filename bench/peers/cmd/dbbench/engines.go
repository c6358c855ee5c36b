package main

import (
	"context"
	"errors"
	"io"
	"math"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/seed84792017/cellcast/lsm"
)

var errUnsupported = errors.New("unsupported")

// engine is what every workload drives. Writes never sync (db_bench's
// default); each engine keeps its WAL on.
type engine interface {
	set(k, v []byte) error
	// setSync writes and fsyncs before returning; safe for concurrent use.
	setSync(k, v []byte) error
	merge(k, v []byte) error
	// get reports whether the key was found.
	get(k []byte) (bool, error)
	// seek positions at the first key >= k and steps next times; it
	// returns how many keys it saw.
	seek(k []byte, next int) (int, error)
	scan() (int, error)
	compact() error
	writeAmp() float64
	// liveBytes is the size of the live tables (NaN if unknown).
	liveBytes() float64
	close() error
}

type engineSpec struct {
	name string
	open func(dir string, cacheBytes int64) (engine, error)
}

var engines = []engineSpec{
	{"cellcast", openCellcast},
	{"pebble", openPebble},
	{"goleveldb", openGoleveldb},
}

// --- cellcast ---

type cellcastEngine struct{ db *lsm.DB }

func openCellcast(dir string, cacheBytes int64) (engine, error) {
	db, err := lsm.Open(dir, &lsm.Options{BlockCacheSize: cacheBytes})
	return &cellcastEngine{db}, err
}

func (e *cellcastEngine) set(k, v []byte) error     { return e.db.Set(k, v, lsm.NoSync) }
func (e *cellcastEngine) setSync(k, v []byte) error { return e.db.Set(k, v, lsm.Sync) }
func (e *cellcastEngine) merge(k, v []byte) error   { return e.db.Merge(k, v, lsm.NoSync) }
func (e *cellcastEngine) get(k []byte) (bool, error) {
	_, err := e.db.Get(k)
	if errors.Is(err, lsm.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
func (e *cellcastEngine) seek(k []byte, next int) (int, error) {
	it, err := e.db.NewIter(nil)
	if err != nil {
		return 0, err
	}
	n := 0
	for ok := it.SeekGE(k); ok && n <= next; ok = it.Next() {
		n++
	}
	return n, it.Close()
}
func (e *cellcastEngine) scan() (int, error) {
	it, err := e.db.NewIter(nil)
	if err != nil {
		return 0, err
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n, it.Close()
}
func (e *cellcastEngine) compact() error     { return e.db.Compact(context.Background(), nil, nil) }
func (e *cellcastEngine) writeAmp() float64  { return e.db.Metrics().WriteAmp() }
func (e *cellcastEngine) liveBytes() float64 { return float64(e.db.Metrics().DiskSize()) }
func (e *cellcastEngine) close() error       { return e.db.Close() }

// --- pebble ---

type pebbleEngine struct{ db *pebble.DB }

// concatMerger builds a list by concatenating fragments newest first, the
// same list semantics as Cellcast's ConcatMerger.
type concatMerger struct{ buf []byte }

func (m *concatMerger) MergeNewer(v []byte) error {
	m.buf = append(append([]byte(nil), v...), m.buf...)
	return nil
}
func (m *concatMerger) MergeOlder(v []byte) error { m.buf = append(m.buf, v...); return nil }
func (m *concatMerger) Finish(bool) ([]byte, io.Closer, error) {
	return m.buf, nil, nil
}

var pebbleConcat = &pebble.Merger{
	Name: "cellcast.concat",
	Merge: func(_, v []byte) (pebble.ValueMerger, error) {
		return &concatMerger{buf: append([]byte(nil), v...)}, nil
	},
}

// pebbleMemtables is what Pebble reserves from its cache for memtables
// (default 4 MiB, up to two queued); it gets that much on top so its block
// cache equals the others'.
const pebbleMemtables = 2 * 4 << 20

func openPebble(dir string, cacheBytes int64) (engine, error) {
	c := pebble.NewCache(cacheBytes + pebbleMemtables)
	defer c.Unref()
	o := &pebble.Options{Cache: c, Merger: pebbleConcat, Logger: quietPebble{}}
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		o.Levels[i].FilterType = pebble.TableFilter
	}
	db, err := pebble.Open(dir, o)
	return &pebbleEngine{db}, err
}

type quietPebble struct{}

func (quietPebble) Infof(string, ...interface{})  {}
func (quietPebble) Errorf(string, ...interface{}) {}
func (quietPebble) Fatalf(format string, args ...interface{}) {
	panic(errors.New("pebble fatal"))
}

func (e *pebbleEngine) set(k, v []byte) error     { return e.db.Set(k, v, pebble.NoSync) }
func (e *pebbleEngine) setSync(k, v []byte) error { return e.db.Set(k, v, pebble.Sync) }
func (e *pebbleEngine) merge(k, v []byte) error   { return e.db.Merge(k, v, pebble.NoSync) }
func (e *pebbleEngine) get(k []byte) (bool, error) {
	_, closer, err := e.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, closer.Close()
}
func (e *pebbleEngine) seek(k []byte, next int) (int, error) {
	it, err := e.db.NewIter(nil)
	if err != nil {
		return 0, err
	}
	n := 0
	for ok := it.SeekGE(k); ok && n <= next; ok = it.Next() {
		_ = it.Value()
		n++
	}
	return n, it.Close()
}
func (e *pebbleEngine) scan() (int, error) {
	it, err := e.db.NewIter(nil)
	if err != nil {
		return 0, err
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		_ = it.Value()
		n++
	}
	return n, it.Close()
}
func (e *pebbleEngine) compact() error {
	return e.db.Compact(context.Background(), []byte{0}, []byte{0xff, 0xff, 0xff, 0xff}, true)
}
func (e *pebbleEngine) writeAmp() float64 {
	t := e.db.Metrics().Total()
	return t.WriteAmp()
}
func (e *pebbleEngine) liveBytes() float64 { return float64(e.db.Metrics().Total().TablesSize) }
func (e *pebbleEngine) close() error       { return e.db.Close() }

// --- goleveldb ---

type goleveldbEngine struct{ db *leveldb.DB }

func openGoleveldb(dir string, cacheBytes int64) (engine, error) {
	db, err := leveldb.OpenFile(dir, &opt.Options{
		BlockCacheCapacity: int(cacheBytes),
		Filter:             filter.NewBloomFilter(10),
		Compression:        opt.SnappyCompression,
	})
	return &goleveldbEngine{db}, err
}

var noSync = &opt.WriteOptions{Sync: false}

func (e *goleveldbEngine) set(k, v []byte) error { return e.db.Put(k, v, noSync) }
func (e *goleveldbEngine) setSync(k, v []byte) error {
	return e.db.Put(k, v, &opt.WriteOptions{Sync: true})
}
func (e *goleveldbEngine) merge(k, v []byte) error {
	return errUnsupported
}
func (e *goleveldbEngine) get(k []byte) (bool, error) {
	_, err := e.db.Get(k, nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
func (e *goleveldbEngine) seek(k []byte, next int) (int, error) {
	it := e.db.NewIterator(nil, nil)
	defer it.Release()
	n := 0
	for ok := it.Seek(k); ok && n <= next; ok = it.Next() {
		n++
	}
	return n, it.Error()
}
func (e *goleveldbEngine) scan() (int, error) {
	it := e.db.NewIterator(nil, nil)
	defer it.Release()
	n := 0
	for it.Next() {
		n++
	}
	return n, it.Error()
}
func (e *goleveldbEngine) compact() error     { return e.db.CompactRange(util.Range{}) }
func (e *goleveldbEngine) writeAmp() float64  { return math.NaN() }
func (e *goleveldbEngine) liveBytes() float64 { return math.NaN() }
func (e *goleveldbEngine) close() error       { return e.db.Close() }
