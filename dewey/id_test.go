package dewey

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"testing"
)

func TestParseAndPrint(t *testing.T) {
	good := []string{"1", "1.4.2", "4294967295.7", "10.2.300"}
	for _, s := range good {
		id, err := Parse(s)
		if err != nil || id.String() != s {
			t.Fatalf("Parse(%q) = %v, %v", s, id, err)
		}
	}
	bad := []struct {
		in   string
		want error
	}{
		{"", ErrEmpty}, {"1..2", ErrMalformed}, {".1", ErrMalformed}, {"1.", ErrMalformed},
		{"1.a", ErrMalformed}, {"-1", ErrMalformed}, {"+1", ErrMalformed}, {"01", ErrMalformed},
		{"1.0", ErrZero}, {"0", ErrZero}, {"4294967296", ErrOverflow}, {"99999999999999999999", ErrOverflow},
		{" 1", ErrMalformed}, {"1 .2", ErrMalformed},
	}
	for _, b := range bad {
		if _, err := Parse(b.in); !errors.Is(err, b.want) {
			t.Fatalf("Parse(%q) error %v, want %v", b.in, err, b.want)
		}
	}
	deep := "1"
	for i := 1; i <= MaxDepth; i++ {
		deep += ".1"
	}
	if _, err := Parse(deep); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("too deep: %v", err)
	}
}

func TestRelations(t *testing.T) {
	a, b, c := MustParse("1.4"), MustParse("1.4.1.2"), MustParse("1.40")
	if !a.IsAncestorOrSelf(b) || !a.IsAncestorOrSelf(a) || a.IsAncestorOrSelf(c) || b.IsAncestorOrSelf(a) {
		t.Fatal("IsAncestorOrSelf")
	}
	if !Overlaps(a, b) || !Overlaps(b, a) || Overlaps(a, c) {
		t.Fatal("Overlaps")
	}
	if p, ok := b.Parent(); !ok || p.String() != "1.4.1" {
		t.Fatalf("Parent %v", p)
	}
	if _, ok := MustParse("7").Parent(); ok {
		t.Fatal("root has a parent")
	}
	anc := b.Ancestors()
	if len(anc) != 3 || anc[0].String() != "1" || anc[2].String() != "1.4.1" {
		t.Fatalf("Ancestors %v", anc)
	}
	if n, ok := a.NextSibling(); !ok || n.String() != "1.5" {
		t.Fatalf("NextSibling %v", n)
	}
	if _, ok := (ID{1, math.MaxUint32}).NextSibling(); ok {
		t.Fatal("next sibling of the largest component")
	}
}

func randID(rng *rand.Rand) ID {
	id := make(ID, 1+rng.Intn(6))
	for i := range id {
		switch rng.Intn(4) {
		case 0:
			id[i] = uint32(1 + rng.Intn(4))
		case 1:
			id[i] = uint32(240 + rng.Intn(20)) // around the one-byte limit
		case 2:
			id[i] = uint32(1 + rng.Intn(70000))
		default:
			id[i] = uint32(math.MaxUint32 - uint32(rng.Intn(3)))
		}
	}
	return id
}

// idOrder is the order the encoding must reproduce: component by
// component numerically, a prefix first.
func idOrder(a, b ID) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		switch {
		case a[i] < b[i]:
			return -1
		case a[i] > b[i]:
			return 1
		}
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}

// The laws: round trip; byte order equals Dewey order; a parent's encoding
// is a strict prefix of its descendants'; the subtree of c is exactly the
// key range [Encode(c), SubtreeEnd(c)), flag bytes included.
func TestEncodingLaws(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 200000; i++ {
		a, b := randID(rng), randID(rng)
		if rng.Intn(3) == 0 {
			b = append(append(ID(nil), a[:rng.Intn(len(a))+1]...), randID(rng)...)
		}
		ea, eb := a.Encode(), b.Encode()
		if d, err := Decode(ea); err != nil || !d.Equal(a) {
			t.Fatalf("round trip %v -> %x -> %v, %v", a, ea, d, err)
		}
		if got, want := bytes.Compare(ea, eb), idOrder(a, b); got != want {
			t.Fatalf("order of %v and %v: bytes %d, ids %d", a, b, got, want)
		}
		if a.IsAncestorOrSelf(b) != bytes.HasPrefix(eb, ea) {
			t.Fatalf("prefix law for %v, %v", a, b)
		}
		lo, hi := a.SubtreeRange()
		for _, flag := range []byte{0x00, 0x01} {
			k := append(append([]byte(nil), eb...), flag)
			in := bytes.Compare(k, lo) >= 0 && bytes.Compare(k, hi) < 0
			if in != a.IsAncestorOrSelf(b) {
				t.Fatalf("subtree law: %v in range of %v = %v", b, a, in)
			}
		}
		// Flags sort before every child.
		if len(b) > len(a) && a.IsAncestorOrSelf(b) && bytes.Compare(append(ea, 0x01), eb) >= 0 {
			t.Fatalf("flag of %v does not precede child %v", a, b)
		}
	}
}

func TestDecodeRejectsDamage(t *testing.T) {
	for _, b := range [][]byte{{}, {0xF9, 0x01}, {0xF8, 0x05}, {0xF9, 0x00, 0xFF}, {0x05, 0x00}} {
		if _, err := Decode(b); err == nil {
			t.Fatalf("Decode(%x) accepted", b)
		}
	}
	id, rest, err := DecodePrefix(append(MustParse("1.300").Encode(), 0x01, 0x07))
	if err != nil || id.String() != "1.300" || !bytes.Equal(rest, []byte{0x01, 0x07}) {
		t.Fatalf("DecodePrefix: %v %x %v", id, rest, err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(MustParse("1.4.300.70000").Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := Decode(b)
		if err != nil {
			return
		}
		if !bytes.Equal(id.Encode(), b) {
			t.Fatalf("decoded %v re-encodes to %x, not %x", id, id.Encode(), b)
		}
	})
}

func TestPrefixEnds(t *testing.T) {
	id := MustParse("1.300.4.70000")
	enc := append(id.Encode(), 0x01)
	var got []string
	PrefixEnds(enc, func(end int) {
		d, err := Decode(enc[:end])
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, d.String())
	})
	if want := "[1 1.300 1.300.4 1.300.4.70000]"; fmt.Sprint(got) != want {
		t.Fatalf("got %v want %s", got, want)
	}
}
