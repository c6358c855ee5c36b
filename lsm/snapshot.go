package lsm

import "container/list"

// Snapshot is a consistent read view at one sequence number. Compactions
// keep everything it can see until it is closed.
type Snapshot struct {
	d    *DB
	seq  uint64
	elem *list.Element
}

type snapshotList struct{ l list.List }

func (s *snapshotList) init() { s.l.Init() }

// seqs returns the live snapshots' sequence numbers, ascending.
func (s *snapshotList) seqs() []uint64 {
	if s.l.Len() == 0 {
		return nil
	}
	out := make([]uint64, 0, s.l.Len())
	for e := s.l.Front(); e != nil; e = e.Next() {
		out = append(out, e.Value.(*Snapshot).seq)
	}
	return out
}

// NewSnapshot returns a snapshot of the current state. Close it when done.
func (d *DB) NewSnapshot() *Snapshot {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := &Snapshot{d: d, seq: d.visibleSeq.Load()}
	// Sequence numbers only grow, so appending keeps the list sorted.
	s.elem = d.snapshots.l.PushBack(s)
	d.snapshotEpoch++
	return s
}

// Close releases the snapshot.
func (s *Snapshot) Close() error {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	if s.elem != nil {
		s.d.snapshots.l.Remove(s.elem)
		s.elem = nil
	}
	return nil
}

// Get reads key as of the snapshot.
func (s *Snapshot) Get(key []byte) ([]byte, error) { return s.d.get(key, s.seq) }

// NewIter iterates as of the snapshot.
func (s *Snapshot) NewIter(o *IterOptions) (*Iterator, error) { return s.d.newIter(o, s.seq) }
