package record

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"testing"
)

// preallocLog writes before, the mark, then after, and returns the log
// and where each record of after starts.
func preallocLog(t *testing.T, before, after [][]byte) ([]byte, []int) {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, r := range before {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	w.MarkPreallocated()
	offs := make([]int, len(after))
	for i, r := range after {
		offs[i] = int(w.Size())
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), offs
}

func numbered(from, n, size int) [][]byte {
	recs := make([][]byte, n)
	for i := range recs {
		recs[i] = []byte(fmt.Sprintf("record-%05d-%s", from+i, bytes.Repeat([]byte("p"), size)))
	}
	return recs
}

// The mark is no record: the records on both sides of it read back as
// written, and the log is not torn.
func TestPreallocMarkIsNoRecord(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	before, after := randRecords(rng, 50), randRecords(rng, 50)
	data, _ := preallocLog(t, before, after)
	got, r, err := readLog(data)
	if err != nil || r.Torn() {
		t.Fatalf("err %v, torn %v", err, r.Torn())
	}
	sameRecords(t, got, append(append([][]byte(nil), before...), after...))
}

// After the mark, a crash during one write's sync may leave its pages on
// disk in any order: zeros or a torn chunk before good chunks, all within
// PreallocWindow, are the log's torn end, and the records before them
// are read. The same damage in a log without the mark, or good chunks
// PreallocWindow or more past the damage, are corruption.
func TestPreallocDamageWithinTheWindowIsATornTail(t *testing.T) {
	before := numbered(0, 20, 200)
	after := numbered(20, 6000, 300) // about 1.9 MiB, past the window
	marked, offs := preallocLog(t, before, after)
	plain := buildLog(t, append(append([][]byte(nil), before...), after...))
	if len(marked) < PreallocWindow+4*BlockSize {
		t.Fatalf("log of %d bytes: too short", len(marked))
	}
	cases := []struct {
		name   string
		at     int // a record of after
		damage func(b []byte, from int)
	}{
		{"zeroed pages", 5200, func(b []byte, from int) { clear(b[from : from+10000]) }},
		{"a flipped byte", 5300, func(b []byte, from int) { b[from+9] ^= 0x40 }},
		{"zeroed header only", 5400, func(b []byte, from int) { clear(b[from : from+headerSize]) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			from := offs[tc.at]
			bad := append([]byte(nil), marked...)
			tc.damage(bad, from)
			got, r, err := readLog(bad)
			if err != nil || !r.Torn() || len(got) != len(before)+tc.at {
				t.Fatalf("marked log: %d records (want %d), torn %v, err %v", len(got), len(before)+tc.at, r.Torn(), err)
			}
			for i, rec := range got {
				if want := append(before, after...)[i]; !bytes.Equal(rec, want) {
					t.Fatalf("record %d differs", i)
				}
			}
			if r.Offset() != int64(from) {
				t.Fatalf("valid prefix %d, want %d", r.Offset(), from)
			}

			// Without the mark the log was written by appending: the
			// same damage is corruption.
			shift := len(plain) - len(marked) // the mark's bytes
			badPlain := append([]byte(nil), plain...)
			tc.damage(badPlain, from+shift)
			if _, _, err := readLog(badPlain); !errors.Is(err, ErrCorruption) {
				t.Fatalf("unmarked log: err %v, want corruption", err)
			}
		})
	}
	t.Run("good chunks past the window", func(t *testing.T) {
		bad := append([]byte(nil), marked...)
		from := offs[100]
		clear(bad[from : from+1000])
		if len(bad)-from < PreallocWindow+BlockSize {
			t.Fatal("no good chunk past the window")
		}
		got, _, err := readLog(bad)
		var ce *CorruptionError
		if !errors.As(err, &ce) || ce.Offset != int64(from) {
			t.Fatalf("%d records, err %v; want corruption at %d", len(got), err, from)
		}
	})
}
