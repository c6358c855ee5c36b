package listdb

import (
	"encoding/binary"
	"fmt"

	"github.com/seed84792017/cellcast/lsm"
	"github.com/seed84792017/cellcast/subscriptions"
)

// Merger concatenates fragments newer first under one combined header.
var Merger = &lsm.Merger{Name: "cellcast.listdb.v1", Merge: mergeFragments}

func mergeFragments(_ []byte, ops [][]byte, _ bool) ([]byte, error) {
	var h header
	n := headerLen
	for i, op := range ops {
		oh, err := readHeader(op)
		if err != nil {
			return nil, fmt.Errorf("operand %d: %w", i, err)
		}
		if i == 0 || oh.newest > h.newest {
			h.newest = oh.newest
		}
		if i == 0 || oh.maxTmax > h.maxTmax {
			h.maxTmax = oh.maxTmax
		}
		h.count += oh.count
		n += len(op) - headerLen
	}
	out := appendHeader(make([]byte, 0, n), h)
	for _, op := range ops {
		out = append(out, op[headerLen:]...)
	}
	return out, nil
}

// rebuild makes a fragment from whole records, newest first.
func rebuild(recs [][]byte, h header) []byte {
	n := headerLen
	for _, r := range recs {
		n += len(r)
	}
	out := appendHeader(make([]byte, 0, n), h)
	for _, r := range recs {
		out = append(out, r...)
	}
	return out
}

// ExpiryFilter drops records whose Tmax has passed and every cancelled
// subscription whose cancel sits in the same value (both go). A fragment
// whose header says everything expired is dropped without being decoded.
// Now reads the broker's current time without taking a stamp. InFlight,
// if set, returns the stamp of the oldest operation still reading (or
// math.MaxInt64): a record it may report, one live at its stamp, must
// stay however long that operation takes. A record goes only once it
// expired more than ExpiryGrace before both.
type ExpiryFilter struct {
	Now      func() int64
	InFlight func() int64
}

// ExpiryGrace is how long past its Tmax a record stays: an ended
// subscription can be replayed that long (subscriptions.ResumeGrace).
const ExpiryGrace = int64(subscriptions.ResumeGrace)

// Filter implements lsm.CompactionFilter.
func (f *ExpiryFilter) Filter(_ int, _ []byte, _ lsm.Kind, v []byte) (lsm.FilterDecision, []byte) {
	h, err := readHeader(v)
	if err != nil {
		// Not ours to judge: keep it, reads will report the damage.
		return lsm.FilterKeep, nil
	}
	now := f.Now()
	if f.InFlight != nil {
		now = min(now, f.InFlight())
	}
	now -= ExpiryGrace
	if h.maxTmax < now {
		return lsm.FilterRemove, nil
	}
	var cancels map[int64]bool
	dropped := false
	// Cancels are newer than what they cancel, so they come first.
	err = forEach(v, func(r *Rec) bool {
		if r.Tmax < now {
			dropped = true
		} else if r.Kind == KindCancel {
			if cancels == nil {
				cancels = map[int64]bool{}
			}
			cancels[r.Aux] = false
		}
		return true
	})
	if err != nil {
		return lsm.FilterKeep, nil
	}
	if cancels != nil {
		forEach(v, func(r *Rec) bool {
			if _, ok := cancels[r.T]; ok && r.Kind == KindSubscription {
				cancels[r.T] = true
				dropped = true
			}
			return true
		})
	}
	if !dropped {
		return lsm.FilterKeep, nil
	}
	var keep [][]byte
	var nh header
	forEach(v, func(r *Rec) bool {
		switch {
		case r.Tmax < now:
		case r.Kind == KindCancel && cancels[r.Aux]:
		case r.Kind == KindSubscription && cancels[r.T]:
		default:
			if len(keep) == 0 || r.T > nh.newest {
				nh.newest = r.T
			}
			if len(keep) == 0 || r.Tmax > nh.maxTmax {
				nh.maxTmax = r.Tmax
			}
			keep = append(keep, r.Raw)
		}
		return true
	})
	if len(keep) == 0 {
		return lsm.FilterRemove, nil
	}
	nh.count = uint32(len(keep))
	return lsm.FilterChange, rebuild(keep, nh)
}

// timesCollector records, per block and per table, the newest record time
// and the latest expiry of the fragments written there, so a read skips
// blocks too old for its window (thesis Algorithm 1, per block) and blocks
// whose records have all expired but were not yet compacted away.
//
// Skipping a block is safe for list keys: the store takes no snapshots and
// never deletes a list, so no Set or Delete of a list ever shadows older
// fragments below it (see lsm.BlockPropertyFilter).
type timesCollector struct {
	block, table times
}

type times struct{ newest, maxTmax int64 }

var noTimes = times{minInt64, minInt64}

func (t *times) add(h header) {
	t.newest = max(t.newest, h.newest)
	t.maxTmax = max(t.maxTmax, h.maxTmax)
}

func (t times) encode() []byte {
	b := binary.LittleEndian.AppendUint64(make([]byte, 0, 16), uint64(t.newest))
	return binary.LittleEndian.AppendUint64(b, uint64(t.maxTmax))
}

const collectorName = "cellcast.times"

// NewTimesCollector is the lsm block property collector for list tables.
func NewTimesCollector() lsm.BlockPropertyCollector {
	return &timesCollector{block: noTimes, table: noTimes}
}

const minInt64 = -1 << 63

func (c *timesCollector) Name() string { return collectorName }

func (c *timesCollector) Add(_ lsm.InternalKey, v []byte) error {
	if h, err := readHeader(v); err == nil {
		c.block.add(h)
		c.table.add(h)
	}
	return nil
}

func (c *timesCollector) FinishDataBlock() ([]byte, error) {
	b := c.block.encode()
	c.block = noTimes
	return b, nil
}

func (c *timesCollector) FinishTable() ([]byte, error) { return c.table.encode(), nil }

// timeFilter passes tables and blocks holding a fragment stamped at or after
// newerThan that also holds a record live at liveAt.
type timeFilter struct{ newerThan, liveAt int64 }

func (timeFilter) Name() string { return collectorName }

func (f timeFilter) Intersects(p []byte) (bool, error) {
	if len(p) != 16 {
		return true, nil
	}
	newest := int64(binary.LittleEndian.Uint64(p))
	maxTmax := int64(binary.LittleEndian.Uint64(p[8:]))
	return newest >= f.newerThan && maxTmax >= f.liveAt, nil
}
