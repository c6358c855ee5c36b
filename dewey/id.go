package dewey

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ID is a Dewey id: a non-empty path of positive components. The zero
// value (no components) is not a valid id. IDs are values; methods never
// modify their receiver.
type ID []uint32

// MaxDepth is the deepest id this package accepts anywhere.
const MaxDepth = 64

// Errors for bad input; match with errors.Is.
var (
	ErrMalformed = errors.New("dewey: malformed id")
	ErrZero      = errors.New("dewey: components must be positive")
	ErrOverflow  = errors.New("dewey: component out of range")
	ErrTooDeep   = errors.New("dewey: id deeper than allowed")
	ErrEmpty     = errors.New("dewey: empty id")
)

// Parse reads "1.4.2". Components are decimal integers from 1 to 2³²−1,
// without signs or leading zeros.
func Parse(s string) (ID, error) {
	if s == "" {
		return nil, ErrEmpty
	}
	parts := strings.Split(s, ".")
	if len(parts) > MaxDepth {
		return nil, fmt.Errorf("%w: %d components, limit %d", ErrTooDeep, len(parts), MaxDepth)
	}
	id := make(ID, len(parts))
	for i, p := range parts {
		if p == "" || (len(p) > 1 && p[0] == '0') {
			return nil, fmt.Errorf("%w: %q", ErrMalformed, s)
		}
		for _, c := range p {
			if c < '0' || c > '9' {
				return nil, fmt.Errorf("%w: %q", ErrMalformed, s)
			}
		}
		v, err := strconv.ParseUint(p, 10, 64)
		if err != nil || v > math.MaxUint32 {
			return nil, fmt.Errorf("%w: %q", ErrOverflow, p)
		}
		if v == 0 {
			return nil, fmt.Errorf("%w: %q", ErrZero, s)
		}
		id[i] = uint32(v)
	}
	return id, nil
}

// MustParse is Parse for constants in tests and examples; it panics on
// error and must not see user input.
func MustParse(s string) ID {
	id, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return id
}

// Validate checks an id built in code: non-empty, positive, at most
// maxDepth components.
func (id ID) Validate(maxDepth int) error {
	if len(id) == 0 {
		return ErrEmpty
	}
	if len(id) > maxDepth {
		return fmt.Errorf("%w: depth %d, limit %d", ErrTooDeep, len(id), maxDepth)
	}
	for _, c := range id {
		if c == 0 {
			return ErrZero
		}
	}
	return nil
}

func (id ID) String() string {
	// One allocation, sized for components below 1000 (a grid's are): a
	// string per component and a growing builder were 1% of a broker's CPU.
	var b strings.Builder
	b.Grow(4 * len(id))
	var num [20]byte
	for i, c := range id {
		if i > 0 {
			b.WriteByte('.')
		}
		b.Write(strconv.AppendUint(num[:0], uint64(c), 10))
	}
	return b.String()
}

// Depth is the number of components.
func (id ID) Depth() int { return len(id) }

// Equal reports whether two ids are the same.
func (id ID) Equal(o ID) bool {
	if len(id) != len(o) {
		return false
	}
	for i := range id {
		if id[i] != o[i] {
			return false
		}
	}
	return true
}

// Child returns id extended by one component.
func (id ID) Child(c uint32) ID {
	out := make(ID, len(id)+1)
	copy(out, id)
	out[len(id)] = c
	return out
}

// Parent returns the id without its last component; ok is false at a root.
func (id ID) Parent() (ID, bool) {
	if len(id) <= 1 {
		return nil, false
	}
	return append(ID(nil), id[:len(id)-1]...), true
}

// Ancestors returns the proper ancestors, root first.
func (id ID) Ancestors() []ID {
	out := make([]ID, 0, max(len(id)-1, 0))
	for d := 1; d < len(id); d++ {
		out = append(out, append(ID(nil), id[:d]...))
	}
	return out
}

// IsAncestorOrSelf reports whether id is o or an ancestor of o.
func (id ID) IsAncestorOrSelf(o ID) bool {
	if len(id) == 0 || len(id) > len(o) {
		return false
	}
	for i := range id {
		if id[i] != o[i] {
			return false
		}
	}
	return true
}

// Overlaps reports whether one id is an ancestor-or-self of the other: the
// cells share area (or the topics share subject). It compares from the
// last shared component back: the cells of one place share long prefixes
// and differ near their ends.
func Overlaps(a, b ID) bool {
	n := min(len(a), len(b))
	if n == 0 {
		return false
	}
	for i := n - 1; i >= 0; i-- {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// NextSibling returns the id with its last component plus one; ok is false
// when that component is already the largest.
func (id ID) NextSibling() (ID, bool) {
	if len(id) == 0 || id[len(id)-1] == math.MaxUint32 {
		return nil, false
	}
	out := append(ID(nil), id...)
	out[len(out)-1]++
	return out, true
}

// The encoding of one component: values 1…246 are one byte 0x02…0xF7; larger
// values are a length byte 0xF8…0xFB (1…4 bytes follow) and the value big
// endian in as few bytes as hold it. Longer forms hold larger values, so
// byte order is numeric order. Bytes 0x00 and 0x01 never start a component:
// storage layers append them as flags that sort before every child.
const (
	smallBase = 0x01 // byte = value + smallBase
	smallMax  = 0xF6
	longBase  = 0xF7 // byte = longBase + number of value bytes
	// PastAll is greater than the first byte of any component: the end of
	// a subtree whose last component cannot be incremented.
	PastAll = 0xFC
)

// AppendEncoded appends the binary encoding of id to dst.
func (id ID) AppendEncoded(dst []byte) []byte {
	for _, c := range id {
		dst = appendComponent(dst, c)
	}
	return dst
}

// Encode returns the binary encoding of id.
func (id ID) Encode() []byte { return id.AppendEncoded(make([]byte, 0, len(id)+4)) }

func appendComponent(dst []byte, c uint32) []byte {
	if c <= smallMax {
		return append(dst, byte(c+smallBase))
	}
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], c)
	n := 4
	for n > 1 && b[4-n] == 0 {
		n--
	}
	dst = append(dst, byte(longBase+n))
	return append(dst, b[4-n:]...)
}

// Decode reads an encoded id; trailing bytes are an error.
func Decode(b []byte) (ID, error) {
	id, rest, err := DecodePrefix(b)
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(rest))
	}
	return id, nil
}

// DecodePrefix reads an encoded id from the front of b and returns the rest,
// which starts at the first byte that cannot begin a component (a flag).
func DecodePrefix(b []byte) (ID, []byte, error) {
	return decodeOnto(make(ID, 0, min(len(b), MaxDepth)), b)
}

// DecodeOnto reads an encoded id, which must fill b, into the free
// capacity of arena, and returns it and arena with it: the cells of a
// record share one allocation. Without room for len(b) components (each
// takes a byte at least) it allocates as Decode does.
func DecodeOnto(arena []uint32, b []byte) (ID, []uint32, error) {
	if cap(arena)-len(arena) < len(b) {
		id, err := Decode(b)
		return id, arena, err
	}
	id, rest, err := decodeOnto(arena[len(arena):], b)
	switch {
	case err != nil:
		return nil, arena, err
	case len(rest) > 0:
		return nil, arena, fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(rest))
	}
	return id[:len(id):len(id)], arena[:len(arena)+len(id)], nil
}

// decodeOnto is DecodePrefix appending onto id (empty, with capacity).
func decodeOnto(id ID, b []byte) (ID, []byte, error) {
	for len(b) > 0 && b[0] > smallBase && b[0] < PastAll {
		if len(id) == MaxDepth {
			return nil, nil, ErrTooDeep
		}
		c := b[0]
		if c <= smallMax+smallBase {
			id = append(id, uint32(c-smallBase))
			b = b[1:]
			continue
		}
		n := int(c - longBase)
		if len(b) < 1+n {
			return nil, nil, fmt.Errorf("%w: truncated component", ErrMalformed)
		}
		var v uint32
		for _, x := range b[1 : 1+n] {
			v = v<<8 | uint32(x)
		}
		// Only the shortest form is valid, so each id has one encoding.
		if v <= smallMax || (n > 1 && b[1] == 0) {
			return nil, nil, fmt.Errorf("%w: non-canonical component", ErrMalformed)
		}
		id = append(id, v)
		b = b[1+n:]
	}
	if len(id) == 0 {
		return nil, nil, ErrEmpty
	}
	return id, b, nil
}

// PrefixEnds calls fn with the end offset of each whole component at the
// front of b: b[:end] is then the encoding of an ancestor-or-self id. It
// stops at the first byte that cannot start a component.
func PrefixEnds(b []byte, fn func(end int)) {
	off := 0
	for off < len(b) && b[off] > smallBase && b[off] < PastAll {
		n := 1
		if b[off] > smallMax+smallBase {
			n += int(b[off] - longBase)
		}
		if off+n > len(b) {
			return
		}
		off += n
		fn(off)
	}
}

// SubtreeEnd is the exclusive end of the key range holding id and all its
// descendants (with any flag bytes appended): Encode(NextSibling(id)), or
// Encode(Parent(id)) followed by PastAll when there is no next sibling.
func (id ID) SubtreeEnd() []byte {
	if next, ok := id.NextSibling(); ok {
		return next.Encode()
	}
	return append(id[:len(id)-1].AppendEncoded(nil), PastAll)
}

// SubtreeRange returns [Encode(id), SubtreeEnd(id)).
func (id ID) SubtreeRange() (lo, hi []byte) { return id.Encode(), id.SubtreeEnd() }
