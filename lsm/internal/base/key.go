package base

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Kind says what an internal entry means.
type Kind uint8

const (
	// KindDelete is a tombstone: the key has no value at this sequence number.
	KindDelete Kind = 0
	// KindSet is a full value that shadows everything older.
	KindSet Kind = 1
	// KindMerge is a value-list fragment to be combined with older entries.
	KindMerge Kind = 2

	// KindMax is the largest kind; seeks use it so that a search key sorts
	// before every real entry with the same user key and sequence number.
	KindMax = KindMerge
)

func (k Kind) String() string {
	switch k {
	case KindDelete:
		return "DEL"
	case KindSet:
		return "SET"
	case KindMerge:
		return "MERGE"
	}
	return fmt.Sprintf("KIND(%d)", uint8(k))
}

// Valid reports whether k is a kind the engine writes.
func (k Kind) Valid() bool { return k <= KindMax }

// SeqMax is the largest sequence number: 56 bits, the rest of the trailer
// holds the kind.
const SeqMax = uint64(1)<<56 - 1

// TrailerLen is the size of the encoded trailer.
const TrailerLen = 8

// MakeTrailer packs a sequence number and a kind.
func MakeTrailer(seq uint64, k Kind) uint64 { return seq<<8 | uint64(k) }

// SearchTrailer is the trailer that sorts before every entry of a user key.
const SearchTrailer = SeqMax<<8 | uint64(KindMax)

// InternalKey is a user key with its trailer.
type InternalKey struct {
	UserKey []byte
	Trailer uint64
}

// MakeKey builds an internal key.
func MakeKey(userKey []byte, seq uint64, k Kind) InternalKey {
	return InternalKey{UserKey: userKey, Trailer: MakeTrailer(seq, k)}
}

// MakeSearchKey builds the smallest internal key for userKey.
func MakeSearchKey(userKey []byte) InternalKey {
	return InternalKey{UserKey: userKey, Trailer: SearchTrailer}
}

// Seq returns the sequence number.
func (k InternalKey) Seq() uint64 { return k.Trailer >> 8 }

// Kind returns the kind.
func (k InternalKey) Kind() Kind { return Kind(k.Trailer & 0xff) }

// Size is the encoded length.
func (k InternalKey) Size() int { return len(k.UserKey) + TrailerLen }

// Clone returns a copy that does not alias the original's bytes.
func (k InternalKey) Clone() InternalKey {
	return InternalKey{UserKey: append([]byte(nil), k.UserKey...), Trailer: k.Trailer}
}

func (k InternalKey) String() string {
	return fmt.Sprintf("%q#%d,%s", k.UserKey, k.Seq(), k.Kind())
}

// Encode appends the encoded key to dst.
func (k InternalKey) Encode(dst []byte) []byte {
	dst = append(dst, k.UserKey...)
	return binary.LittleEndian.AppendUint64(dst, k.Trailer)
}

// DecodeInternalKey splits an encoded internal key. The user key aliases b.
func DecodeInternalKey(b []byte) (InternalKey, bool) {
	n := len(b) - TrailerLen
	if n < 0 {
		return InternalKey{}, false
	}
	return InternalKey{UserKey: b[:n:n], Trailer: binary.LittleEndian.Uint64(b[n:])}, true
}

// Compare orders internal keys: user key ascending, trailer descending.
func Compare(a, b InternalKey) int {
	if c := bytes.Compare(a.UserKey, b.UserKey); c != 0 {
		return c
	}
	switch {
	case a.Trailer > b.Trailer:
		return -1
	case a.Trailer < b.Trailer:
		return 1
	}
	return 0
}

// CompareEncoded compares two encoded internal keys.
func CompareEncoded(a, b []byte) int {
	ka, _ := DecodeInternalKey(a)
	kb, _ := DecodeInternalKey(b)
	return Compare(ka, kb)
}
