package listdb

import (
	"context"

	"github.com/seed84792017/cellcast/lsm"
)

// List names one of a cell's two lists.
type List byte

const (
	Pubs List = 0
	Subs List = 1
)

// Lists is a set of lists.
type Lists struct{ Pubs, Subs bool }

// Append is one fragment to append to a cell's list. Cell is the cell key:
// namespace byte then the Dewey encoding.
type Append struct {
	List     List
	Cell     []byte
	Fragment []byte
}

// A Commit says where an Append's writes end in the log of the engine
// that took them, for Wait. A backend of several engines also notes in
// Read where the other engine's log ended when the writes were applied:
// the operation may have read anything up to there, and must not be
// answered before that is as durable as its own write (with one engine
// the log is a prefix and Pos covers it).
type Commit struct {
	Engine int
	Pos    lsm.WALPos
	Read   lsm.WALPos
}

// Backend is where the lists live.
type Backend interface {
	// Append writes the appends atomically. They are visible to reads
	// when it returns, and durable once Wait(commit) returns.
	Append(appends []Append) (Commit, error)
	// Wait returns once the commit is written to the OS and, if sync, on
	// disk. Concurrent waits share one write and one fsync.
	Wait(c Commit, sync bool) error
	// Visit reports the fragments of the asked lists of cell, and of every
	// cell key below subtreeEnd when that is not nil (the cell's subtree),
	// each key's newest first, honouring fn's decisions as lsm visits do.
	Visit(cell, subtreeEnd []byte, lists Lists, filters []lsm.BlockPropertyFilter, fn func(List, *lsm.Fragment) lsm.VisitDecision) error
	// Meta holds the topic registry and other metadata.
	Meta() MetaStore
	Flush() error
	Compact(ctx context.Context) error
	// Checkpoint writes a copy of the store to dir, which must not exist,
	// while writes go on: opened, it holds every write whose Wait returned
	// before the call (lsm.DB.Checkpoint).
	Checkpoint(dir string) error
	Metrics() []*lsm.Metrics
	// Err is nil while the engines take writes, and otherwise the first
	// sticky write failure (lsm.DB.Err): writes are refused from then on,
	// acknowledged ones are safe, and the fix is the disk and a restart.
	Err() error
	Close() error
}

// MetaStore holds a store's small metadata: high-water marks, the clock
// floor, the topic registry. A Set is durable when it returns.
type MetaStore interface {
	// Get returns key's value, or an error wrapping lsm.ErrNotFound.
	Get(key []byte) ([]byte, error)
	Set(key, value []byte) error
	// Scan calls fn for each key in [lower, upper), in order.
	Scan(lower, upper []byte, fn func(key, value []byte) error) error
}

// LSMMeta keeps metadata in an lsm.DB beside the lists.
func LSMMeta(db *lsm.DB) MetaStore { return lsmMeta{db} }

type lsmMeta struct{ db *lsm.DB }

func (m lsmMeta) Get(key []byte) ([]byte, error) { return m.db.Get(key) }
func (m lsmMeta) Set(key, value []byte) error    { return m.db.Set(key, value, lsm.Sync) }

func (m lsmMeta) Scan(lower, upper []byte, fn func(key, value []byte) error) error {
	it, err := m.db.NewIter(&lsm.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			return err
		}
	}
	return it.Error()
}
