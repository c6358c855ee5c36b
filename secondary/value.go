package secondary

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Type is an attribute's type.
type Type byte

const (
	Int    Type = 'i'
	String Type = 's'
)

func (t Type) String() string {
	switch t {
	case Int:
		return "int"
	case String:
		return "string"
	}
	return fmt.Sprintf("Type(%d)", byte(t))
}

// Value is an attribute value: an int64 or a string.
type Value struct {
	Type Type
	I    int64
	S    string
}

// IntValue and StringValue make values.
func IntValue(i int64) Value     { return Value{Type: Int, I: i} }
func StringValue(s string) Value { return Value{Type: String, S: s} }

func (v Value) String() string {
	if v.Type == Int {
		return fmt.Sprint(v.I)
	}
	return fmt.Sprintf("%q", v.S)
}

// Compare orders values of one type.
func (v Value) Compare(o Value) int {
	if v.Type == Int {
		return cmp.Compare(v.I, o.I)
	}
	return cmp.Compare(v.S, o.S)
}

// appendKey appends v's order-preserving, self-delimiting encoding: ints
// big-endian with the sign bit flipped; strings with 0x00 escaped as 0x00
// 0xff and ended by 0x00 0x01, so a value is never a prefix of another's
// encoding.
func (v Value) appendKey(b []byte) []byte {
	if v.Type == Int {
		return binary.BigEndian.AppendUint64(b, uint64(v.I)^(1<<63))
	}
	for i := 0; i < len(v.S); i++ {
		if v.S[i] == 0 {
			b = append(b, 0, 0xff)
		} else {
			b = append(b, v.S[i])
		}
	}
	return append(b, 0, 1)
}

// errCorrupt marks an undecodable stored value.
var errCorrupt = errors.New("secondary: corrupt stored value")

// decodeKey reads a value of type t from the front of b, returning the
// rest.
func decodeKey(t Type, b []byte) (Value, []byte, error) {
	if t == Int {
		if len(b) < 8 {
			return Value{}, nil, errCorrupt
		}
		return IntValue(int64(binary.BigEndian.Uint64(b) ^ (1 << 63))), b[8:], nil
	}
	var s []byte
	for i := 0; i+1 < len(b); i++ {
		if b[i] != 0 {
			s = append(s, b[i])
			continue
		}
		switch b[i+1] {
		case 0xff:
			s = append(s, 0)
			i++
		case 1:
			return StringValue(string(s)), b[i+2:], nil
		default:
			return Value{}, nil, errCorrupt
		}
	}
	return Value{}, nil, errCorrupt
}

// appendDoc encodes a row: its sequence number, then each attribute as
// name length, name, type, value.
func appendDoc(b []byte, seq uint64, doc Doc) []byte {
	b = binary.AppendUvarint(b, seq)
	for name, v := range doc {
		b = binary.AppendUvarint(b, uint64(len(name)))
		b = append(b, name...)
		b = append(b, byte(v.Type))
		if v.Type == Int {
			b = binary.AppendVarint(b, v.I)
		} else {
			b = binary.AppendUvarint(b, uint64(len(v.S)))
			b = append(b, v.S...)
		}
	}
	return b
}

func decodeDoc(b []byte) (uint64, Doc, error) {
	doc := Doc{}
	seq, err := walkDoc(b, func(name []byte, v Value) bool {
		doc[string(name)] = v
		return true
	})
	if err != nil {
		return 0, nil, err
	}
	return seq, doc, nil
}

// docAttr finds one attribute of an encoded row without decoding the
// rest, for the collectors and scans that look at every row.
func docAttr(b []byte, attr string) (v Value, ok bool, err error) {
	_, err = walkDoc(b, func(name []byte, val Value) bool {
		if string(name) == attr {
			v, ok = val, true
			return false
		}
		return true
	})
	return v, ok, err
}

// walkDoc calls fn with each attribute of an encoded row until fn returns
// false, and returns the row's sequence number.
func walkDoc(b []byte, fn func(name []byte, v Value) bool) (uint64, error) {
	seq, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, errCorrupt
	}
	b = b[n:]
	for len(b) > 0 {
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return 0, errCorrupt
		}
		name := b[n : n+int(l)]
		b = b[n+int(l):]
		if len(b) == 0 {
			return 0, errCorrupt
		}
		t := Type(b[0])
		b = b[1:]
		var v Value
		switch t {
		case Int:
			i, n := binary.Varint(b)
			if n <= 0 {
				return 0, errCorrupt
			}
			v, b = IntValue(i), b[n:]
		case String:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) || l > math.MaxInt32 {
				return 0, errCorrupt
			}
			v, b = StringValue(string(b[n:n+int(l)])), b[n+int(l):]
		default:
			return 0, errCorrupt
		}
		if !fn(name, v) {
			break
		}
	}
	return seq, nil
}

// posting is one index entry: a row's primary key and sequence number.
type posting struct {
	seq uint64
	pk  string
}

// appendPosting encodes an entry of a posting list.
func appendPosting(b []byte, p posting) []byte {
	b = binary.AppendUvarint(b, p.seq)
	b = binary.AppendUvarint(b, uint64(len(p.pk)))
	return append(b, p.pk...)
}

// decodePostings reads a list of entries.
func decodePostings(b []byte, fn func(posting) bool) error {
	for len(b) > 0 {
		seq, n := binary.Uvarint(b)
		if n <= 0 {
			return errCorrupt
		}
		b = b[n:]
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return errCorrupt
		}
		if !fn(posting{seq, string(b[n : n+int(l)])}) {
			return nil
		}
		b = b[n+int(l):]
	}
	return nil
}
