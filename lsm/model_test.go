package lsm

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand"
	"sort"
	"sync/atomic"
	"testing"
)

var longTests = flag.Bool("lsm.long", false, "run long randomized and crash tests")

// opsScale returns n, or n*factor with -lsm.long.
func opsScale(n, factor int) int {
	if *longTests {
		return n * factor
	}
	return n
}

// model is the oracle: each key holds the list of records it would return,
// newest first, exactly as the concat merger builds it.
type model struct{ m map[string][]byte }

func newModel() *model { return &model{m: map[string][]byte{}} }

func (m *model) set(k, v []byte) { m.m[string(k)] = append([]byte(nil), v...) }
func (m *model) del(k []byte)    { delete(m.m, string(k)) }
func (m *model) merge(k, v []byte) {
	m.m[string(k)] = append(append([]byte(nil), v...), m.m[string(k)]...)
}

// writeRandom applies to db and m alike a Delete (a tenth of the time), a
// Merge (merges tenths) or a Set of k to v.
func (m *model) writeRandom(t testing.TB, db *DB, rng *rand.Rand, merges int, k, v []byte) {
	t.Helper()
	var err error
	switch r := rng.Intn(10); {
	case r == 0:
		err = db.Delete(k, NoSync)
		m.del(k)
	case r <= merges:
		err = db.Merge(k, v, NoSync)
		m.merge(k, v)
	default:
		err = db.Set(k, v, NoSync)
		m.set(k, v)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func (m *model) clone() *model {
	c := newModel()
	for k, v := range m.m {
		c.m[k] = v
	}
	return c
}

func (m *model) get(k []byte) ([]byte, bool) {
	v, ok := m.m[string(k)]
	return v, ok
}

func (m *model) keysIn(lo, hi []byte) []string {
	var out []string
	for k := range m.m {
		if (lo == nil || k >= string(lo)) && (hi == nil || k < string(hi)) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Expiring records: 8-byte big-endian expiry, 1-byte payload length,
// payload. A value is a concatenation of records.
func expRecord(expiry uint64, payload string) []byte {
	b := binary.BigEndian.AppendUint64(nil, expiry)
	b = append(b, byte(len(payload)))
	return append(b, payload...)
}

func eachRecord(v []byte, fn func(expiry uint64, rec []byte)) error {
	for len(v) > 0 {
		if len(v) < 9 || len(v) < 9+int(v[8]) {
			return fmt.Errorf("malformed record list %x", v)
		}
		n := 9 + int(v[8])
		fn(binary.BigEndian.Uint64(v), v[:n])
		v = v[n:]
	}
	return nil
}

// liveRecords drops records expired at now.
func liveRecords(v []byte, now uint64) []byte {
	var out []byte
	if err := eachRecord(v, func(exp uint64, rec []byte) {
		if exp >= now {
			out = append(out, rec...)
		}
	}); err != nil {
		panic(err)
	}
	return out
}

// expiryFilter drops expired records against a clock the test advances.
type expiryFilter struct{ now atomic.Uint64 }

func (f *expiryFilter) Filter(_ int, _ []byte, _ Kind, v []byte) (FilterDecision, []byte) {
	live := liveRecords(v, f.now.Load())
	switch {
	case len(live) == 0:
		return FilterRemove, nil
	case len(live) < len(v):
		return FilterChange, live
	}
	return FilterKeep, nil
}

func equalLive(a, b []byte, filtered bool, now uint64) bool {
	if filtered {
		return bytes.Equal(liveRecords(a, now), liveRecords(b, now))
	}
	return bytes.Equal(a, b)
}
