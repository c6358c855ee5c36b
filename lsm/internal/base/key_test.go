package base

import (
	"math/rand"
	"sort"
	"testing"
)

func TestCompareOrdersNewestFirst(t *testing.T) {
	keys := []InternalKey{
		MakeKey([]byte("a"), 1, KindSet),
		MakeKey([]byte("b"), 9, KindSet),
		MakeKey([]byte("a"), 5, KindMerge),
		MakeKey([]byte("a"), 5, KindDelete),
		MakeSearchKey([]byte("a")),
		MakeKey([]byte(""), 3, KindSet),
	}
	sort.Slice(keys, func(i, j int) bool { return Compare(keys[i], keys[j]) < 0 })
	want := []string{`""#3,SET`, `"a"#72057594037927935,MERGE`, `"a"#5,MERGE`, `"a"#5,DEL`, `"a"#1,SET`, `"b"#9,SET`}
	for i, k := range keys {
		if k.String() != want[i] {
			t.Fatalf("position %d: got %s want %s", i, k, want[i])
		}
	}
}

func TestEncodeRoundTripAndOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 2000; i++ {
		a := MakeKey(randBytes(rng), uint64(rng.Int63n(1<<40)), Kind(rng.Intn(3)))
		b := MakeKey(randBytes(rng), uint64(rng.Int63n(1<<40)), Kind(rng.Intn(3)))
		ea, eb := a.Encode(nil), b.Encode(nil)
		da, ok := DecodeInternalKey(ea)
		if !ok || Compare(da, a) != 0 {
			t.Fatalf("round trip %s -> %s", a, da)
		}
		if CompareEncoded(ea, eb) != Compare(a, b) {
			t.Fatalf("encoded order differs for %s %s", a, b)
		}
	}
	if _, ok := DecodeInternalKey([]byte{1, 2}); ok {
		t.Fatal("short key decoded")
	}
}

func randBytes(rng *rand.Rand) []byte {
	b := make([]byte, rng.Intn(4))
	for i := range b {
		b[i] = byte('a' + rng.Intn(3))
	}
	return b
}
