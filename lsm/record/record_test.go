package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"testing"
)

func buildLog(t testing.TB, recs [][]byte) []byte {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if int64(buf.Len()) != w.Size() {
		t.Fatalf("Size %d, wrote %d", w.Size(), buf.Len())
	}
	return buf.Bytes()
}

func readLog(data []byte) ([][]byte, *Reader, error) {
	r := NewReader("test.log", data)
	var out [][]byte
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out, r, nil
		}
		if err != nil {
			return out, r, err
		}
		out = append(out, append([]byte(nil), rec...))
	}
}

func randRecords(rng *rand.Rand, n int) [][]byte {
	recs := make([][]byte, n)
	for i := range recs {
		size := rng.Intn(100)
		if rng.Intn(10) == 0 {
			size = rng.Intn(3 * BlockSize)
		}
		recs[i] = make([]byte, size)
		rng.Read(recs[i])
	}
	return recs
}

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	recs := randRecords(rng, 500)
	recs = append(recs, []byte{}, make([]byte, BlockSize-headerSize), make([]byte, BlockSize))
	got, r, err := readLog(buildLog(t, recs))
	if err != nil {
		t.Fatal(err)
	}
	if r.Torn() {
		t.Fatal("clean log reported torn")
	}
	sameRecords(t, got, recs)
}

func sameRecords(t *testing.T, got, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("record %d differs", i)
		}
	}
}

// Every truncation point yields a prefix of the records and no error.
func TestTornTailAtEveryCut(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	recs := randRecords(rng, 40)
	data := buildLog(t, recs)
	for cut := 0; cut <= len(data); cut += 1 + rng.Intn(97) {
		got, _, err := readLog(data[:cut])
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		for i := range got {
			if !bytes.Equal(got[i], recs[i]) {
				t.Fatalf("cut %d: record %d differs", cut, i)
			}
		}
	}
}

// Garbage in the last record is a torn tail; the same garbage followed by
// valid data is corruption, reported with file and offset.
func TestCorruptionVersusTornTail(t *testing.T) {
	recs := make([][]byte, 0, 200)
	for i := 0; i < 200; i++ {
		recs = append(recs, []byte(fmt.Sprintf("record-%03d-%s", i, bytes.Repeat([]byte("x"), 300))))
	}
	data := buildLog(t, recs)

	tail := append([]byte(nil), data...)
	tail[len(tail)-5] ^= 0xff
	got, r, err := readLog(tail)
	if err != nil || !r.Torn() || len(got) != len(recs)-1 {
		t.Fatalf("torn tail: %d records, torn=%v, err=%v", len(got), r.Torn(), err)
	}

	mid := append([]byte(nil), data...)
	mid[100] ^= 0xff
	_, _, err = readLog(mid)
	var ce *CorruptionError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorruption) {
		t.Fatalf("mid-file flip: %v", err)
	}
	if ce.File != "test.log" || ce.Offset != 0 {
		t.Fatalf("corruption at %s:%d, want test.log:0", ce.File, ce.Offset)
	}
}

func TestZeroPaddingIsEnd(t *testing.T) {
	data := buildLog(t, [][]byte{[]byte("a"), []byte("b")})
	data = append(data, make([]byte, 3*BlockSize)...)
	got, r, err := readLog(data)
	if err != nil || len(got) != 2 || r.Torn() {
		t.Fatalf("%d %v %v", len(got), r.Torn(), err)
	}
}

func FuzzReader(f *testing.F) {
	f.Add(buildLog(f, [][]byte{[]byte("hello"), make([]byte, BlockSize+10)}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader("fuzz", data)
		for i := 0; i < 1000; i++ {
			rec, err := r.Next()
			if err != nil {
				if err != io.EOF && !errors.Is(err, ErrCorruption) {
					t.Fatalf("unexpected error type %v", err)
				}
				return
			}
			if len(rec) > len(data) {
				t.Fatal("record longer than input")
			}
		}
	})
}

// recordOffsets returns where each record of a log built from recs starts.
func recordOffsets(t *testing.T, recs [][]byte) []int {
	t.Helper()
	var offs []int
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, r := range recs {
		off := int(w.Size())
		if BlockSize-off%BlockSize < headerSize {
			off += BlockSize - off%BlockSize
		}
		offs = append(offs, off)
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	return offs
}

// A zero chunk header inside the log, with valid records after it, is
// corruption named by file and offset — never a reason to skip ahead to
// the next block and drop the records in between.
func TestZeroedChunkFollowedByRecordsIsCorruption(t *testing.T) {
	recs := make([][]byte, 0, 400)
	for i := 0; i < 400; i++ {
		recs = append(recs, []byte(fmt.Sprintf("record-%03d-%s", i, bytes.Repeat([]byte("z"), 250))))
	}
	data := buildLog(t, recs)
	offs := recordOffsets(t, recs)
	if len(data) < 3*BlockSize {
		t.Fatalf("log of %d bytes is too short for the test", len(data))
	}
	cases := []struct {
		name     string
		from, to int // zeroed range
	}{
		{"one record zeroed", offs[5], offs[6]},
		{"rest of a block zeroed", offs[10], BlockSize},
		{"range across a block boundary", offs[20], BlockSize + 100},
		{"only a header zeroed", offs[30], offs[30] + headerSize},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bad := append([]byte(nil), data...)
			clear(bad[tc.from:tc.to])
			got, _, err := readLog(bad)
			var ce *CorruptionError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorruption) {
				t.Fatalf("got %d records and err %v; want a corruption error", len(got), err)
			}
			if ce.File != "test.log" || ce.Offset != int64(tc.from) {
				t.Fatalf("corruption at %s:%d, want test.log:%d", ce.File, ce.Offset, tc.from)
			}
			for i := range got {
				if !bytes.Equal(got[i], recs[i]) {
					t.Fatalf("record %d before the zeroed range differs", i)
				}
			}
		})
	}
}

// Zeros at the end of the log — preallocated space, or a tail whose size
// reached the disk before its data — end it cleanly after the last record,
// wherever the zeros begin; zeros followed by garbage that holds no valid
// chunk are a torn tail.
func TestZeroTailEndsTheLog(t *testing.T) {
	recs := make([][]byte, 0, 400)
	for i := 0; i < 400; i++ {
		recs = append(recs, []byte(fmt.Sprintf("record-%03d-%s", i, bytes.Repeat([]byte("z"), 250))))
	}
	data := buildLog(t, recs)
	offs := recordOffsets(t, recs)
	for _, cut := range []int{offs[0], offs[1], offs[150], offs[399], len(data)} {
		n := 0
		for n < len(offs) && offs[n] < cut {
			n++
		}
		zeroed := append(append([]byte(nil), data[:cut]...), make([]byte, 2*BlockSize+cut%1000)...)
		got, r, err := readLog(zeroed)
		if err != nil || len(got) != n || r.Torn() {
			t.Fatalf("zeros from %d: %d records (want %d), torn %v, err %v", cut, len(got), n, r.Torn(), err)
		}
		garbage := append([]byte(nil), zeroed...)
		rand.New(rand.NewSource(int64(cut))).Read(garbage[len(garbage)-500:])
		got, r, err = readLog(garbage)
		if err != nil || len(got) != n || !r.Torn() {
			t.Fatalf("zeros then garbage from %d: %d records (want %d), torn %v, err %v", cut, len(got), n, r.Torn(), err)
		}
	}
}
