package listdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/seed84792017/cellcast/lsm"
	"github.com/seed84792017/cellcast/subscriptions"
)

func nsIndex(ns subscriptions.Namespace) int {
	if ns == subscriptions.NSTopic {
		return 1
	}
	return 0
}

// A mark is a persisted high-water mark. It is raised, and synced, under
// st.mu before the write that needs it; scans read it after taking their
// stamp, so they see every raise made for an operation stamped earlier.
type mark struct {
	key []byte
	v   atomic.Int64
}

// load reads the mark; a store written before marks existed gets legacy.
func (m *mark) load(db MetaStore, fresh bool, legacy int64) error {
	v, err := db.Get(m.key)
	switch {
	case err == nil && len(v) == 8:
		m.v.Store(int64(binary.LittleEndian.Uint64(v)))
	case err == nil:
		return fmt.Errorf("listdb: %s holds %d bytes, want 8", m.key, len(v))
	case !errors.Is(err, lsm.ErrNotFound):
		return fmt.Errorf("listdb: reading %s: %w", m.key, err)
	case !fresh:
		m.v.Store(legacy)
	}
	return nil
}

func (m *mark) raise(db MetaStore, v int64) error {
	if v <= m.v.Load() {
		return nil
	}
	return m.set(db, v)
}

func (m *mark) lower(db MetaStore, v int64) error {
	if v >= m.v.Load() {
		return nil
	}
	return m.set(db, v)
}

func (m *mark) set(db MetaStore, v int64) error {
	if err := db.Set(m.key, binary.LittleEndian.AppendUint64(nil, uint64(v))); err != nil {
		return err
	}
	m.v.Store(v)
	return nil
}

// noCells is the shallowest mark of a namespace nothing was written to.
const noCells = 255

// raiseMarks records, before the write, the depth of the cells an
// operation at c writes to (the deepest and the shallowest so far) and
// the lifetime of its record, rounded up to whole seconds so marks rarely
// move. st.mu is held.
func (st *Store) raiseMarks(list List, c subscriptions.Cell, lifetime int64) error {
	depth := len(c.ID)
	if st.cfg.Granularity == Fixed {
		depth = st.cfg.LeafDepth
	}
	if err := st.deepest[nsIndex(c.NS)].raise(st.b.Meta(), int64(depth)); err != nil {
		return err
	}
	if err := st.shallowest[nsIndex(c.NS)].lower(st.b.Meta(), int64(depth)); err != nil {
		return err
	}
	sec := int64(time.Second)
	return st.span[list].raise(st.b.Meta(), (lifetime+sec-1)/sec*sec)
}
