package pebbledual

import (
	"testing"

	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/listdb/storetest"
	"github.com/seed84792017/cellcast/lsm"
)

// open adapts Open to the store tests: small memtables make the runs
// span many flushes and compactions, as they do for dualdb.
func open(dir string, cfg listdb.Config, _ *lsm.Options) (*listdb.Store, error) {
	return Open(dir, cfg, 8<<20)
}

// The same store tests as dualdb and twodb, except ExpiredDataIsGone:
// Pebble keeps expired records (see doc.go).
func TestDifferential(t *testing.T) { storetest.Differential(t, open) }
func TestClockFloor(t *testing.T)   { storetest.ClockFloor(t, open) }
func TestResumeGrace(t *testing.T)  { storetest.ResumeGrace(t, open) }
func TestBadInput(t *testing.T)     { storetest.BadInput(t, open) }
func TestConcurrent(t *testing.T)   { storetest.Concurrent(t, open) }
