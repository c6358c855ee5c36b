package record

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/seed84792017/cellcast/lsm/internal/base"
)

const (
	// BlockSize is the unit chunks are packed into.
	BlockSize  = 32 << 10
	headerSize = 7

	typeFull   = 1
	typeFirst  = 2
	typeMiddle = 3
	typeLast   = 4
	// typePrealloc is an empty chunk, no record: Writer.MarkPreallocated.
	typePrealloc = 5
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrCorruption is matched by every corruption error the reader returns.
var ErrCorruption = base.ErrCorruption

// CorruptionError names the file and byte offset of bad data.
type CorruptionError = base.CorruptionError

// MaskCRC rotates and offsets a CRC so that a CRC stored inside data that is
// itself checksummed does not weaken the outer checksum (LevelDB's trick).
func MaskCRC(c uint32) uint32 { return (c>>15 | c<<17) + 0xa282ead8 }

// Checksum is the masked CRC-32C of type byte t followed by data.
func Checksum(t byte, data []byte) uint32 {
	c := crc32.Update(0, crcTable, []byte{t})
	return MaskCRC(crc32.Update(c, crcTable, data))
}

// Writer appends records. Records collect in memory until Flush hands them
// to the underlying writer, or Take hands them to the caller. It is not safe
// for concurrent use.
type Writer struct {
	w           io.Writer
	buf         []byte
	blockOffset int
	size        int64
	hdr         [headerSize]byte
}

// NewWriter starts a log at the beginning of w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Size is the number of bytes written so far, including buffered ones.
func (w *Writer) Size() int64 { return w.size }

// Write appends one record. It stays buffered until Flush.
func (w *Writer) Write(rec []byte) error {
	first := true
	for {
		left := w.room()
		n := min(len(rec), left-headerSize)
		last := n == len(rec)
		var t byte
		switch {
		case first && last:
			t = typeFull
		case first:
			t = typeFirst
		case last:
			t = typeLast
		default:
			t = typeMiddle
		}
		w.chunk(t, rec[:n])
		rec = rec[n:]
		first = false
		if last {
			return nil
		}
	}
}

// room returns the space left in the current block, after padding a tail
// too short for a header with zeros (which readers skip).
func (w *Writer) room() int {
	left := BlockSize - w.blockOffset
	if left < headerSize {
		for i := 0; i < left; i++ {
			w.buf = append(w.buf, 0)
		}
		w.size += int64(left)
		w.blockOffset = 0
		left = BlockSize
	}
	return left
}

// chunk appends one chunk; its payload fits the block.
func (w *Writer) chunk(t byte, payload []byte) {
	binary.LittleEndian.PutUint32(w.hdr[0:4], Checksum(t, payload))
	binary.LittleEndian.PutUint16(w.hdr[4:6], uint16(len(payload)))
	w.hdr[6] = t
	w.buf = append(w.buf, w.hdr[:]...)
	w.buf = append(w.buf, payload...)
	w.blockOffset += headerSize + len(payload)
	w.size += int64(headerSize + len(payload))
}

// PreallocWindow is the most a writer of a preallocated log (MarkPreallocated)
// may have written and not yet synced at any moment.
const PreallocWindow = 1 << 20

// MarkPreallocated appends the mark that tells readers the file
// from here on is written over space filled with zeros beforehand and
// synced, so that syncs need not update the file's size. Its writer
// promises to sync at most PreallocWindow bytes at a time, one write after
// another. A crash during a sync may then have put that write's pages on
// disk in any order, which leaves zeros or a torn chunk before good ones:
// the reader takes bad bytes followed by good chunks as a torn tail when no
// good chunk starts PreallocWindow or more bytes after them. The mark is a
// chunk of its own type, which no reader returns as a record (and readers
// older than it refuse as corrupt).
func (w *Writer) MarkPreallocated() {
	w.room()
	w.chunk(typePrealloc, nil)
}

// Flush hands buffered bytes to the underlying writer.
func (w *Writer) Flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.w.Write(w.buf)
	w.buf = w.buf[:0]
	return err
}

// Buffered is the number of bytes not yet flushed or taken.
func (w *Writer) Buffered() int { return len(w.buf) }

// Take returns the buffered bytes, which the caller must write in order,
// and continues buffering into spare.
func (w *Writer) Take(spare []byte) []byte {
	out := w.buf
	w.buf = spare[:0]
	return out
}

// Reader returns the records of a log held in memory.
type Reader struct {
	name string
	data []byte
	off  int
	// torn is set once the reader stopped at a torn tail.
	torn bool
	// prealloc is set once the log's preallocation mark was read.
	prealloc bool
}

// NewReader reads the log in data; name is used in errors.
func NewReader(name string, data []byte) *Reader { return &Reader{name: name, data: data} }

// Torn reports whether the log ended in a torn (incomplete or unverifiable)
// tail that Next treated as the end.
func (r *Reader) Torn() bool { return r.torn }

// Offset is where the next record starts; after io.EOF it is the length of
// the valid prefix of the log.
func (r *Reader) Offset() int64 { return int64(r.off) }

// Next returns the next record, io.EOF at the end of the log (including a
// torn tail), or a *CorruptionError. The record aliases the reader's data.
func (r *Reader) Next() ([]byte, error) {
	var rec []byte
	start := r.off
	inRecord := false
	for {
		c, err := r.chunk()
		if err != nil {
			if err == io.EOF && inRecord {
				// A FIRST without its LAST at the end of the file.
				r.torn = true
			}
			if err == io.EOF {
				r.off = start
			}
			return nil, err
		}
		switch c.typ {
		case typeFull:
			if inRecord {
				return nil, r.corrupt(int64(c.off), "full chunk inside a fragmented record")
			}
			return c.data, nil
		case typePrealloc:
			if inRecord {
				return nil, r.corrupt(int64(c.off), "preallocation mark inside a fragmented record")
			}
			r.prealloc = true
			start = r.off
		case typeFirst:
			if inRecord {
				return nil, r.corrupt(int64(c.off), "first chunk inside a fragmented record")
			}
			inRecord = true
			rec = append(rec[:0], c.data...)
		case typeMiddle, typeLast:
			if !inRecord {
				return nil, r.corrupt(int64(c.off), "continuation chunk without a first chunk")
			}
			rec = append(rec, c.data...)
			if c.typ == typeLast {
				return rec, nil
			}
		}
	}
}

type chunk struct {
	typ  byte
	data []byte
	off  int
}

// chunk returns the next valid chunk, io.EOF at the end or at a torn tail,
// or a corruption error when a bad chunk is followed by good ones.
func (r *Reader) chunk() (chunk, error) {
	for {
		if r.off >= len(r.data) {
			return chunk{}, io.EOF
		}
		left := BlockSize - r.off%BlockSize
		if left < headerSize {
			r.off += left
			continue
		}
		c, ok, reason := parseChunk(r.data, r.off)
		if ok {
			r.off += headerSize + len(c.data)
			return c, nil
		}
		if reason == "" {
			// A zero header where the writer would have put a chunk: the
			// writer never writes one (it pads only block tails too short
			// for a header), so this is space the file system extended
			// but never filled — the true end of the log, if nothing valid
			// follows (within tornSpan). A valid chunk after it means synced
			// records were zeroed, and skipping to them would silently drop
			// records.
			if off, ok := validChunkFrom(r.data, r.off+r.tornSpan()); ok {
				return chunk{}, r.corrupt(int64(r.off), fmt.Sprintf("zeroed chunk header followed by a valid chunk at offset %d", off))
			}
			if !allZero(r.data[r.off:]) {
				r.torn = true
			}
			r.off = len(r.data)
			return chunk{}, io.EOF
		}
		if r.prealloc {
			if _, ok := validChunkFrom(r.data, r.off+PreallocWindow); ok {
				return chunk{}, r.corrupt(int64(r.off), reason)
			}
		} else if validChunkAfter(r.data, r.off) {
			return chunk{}, r.corrupt(int64(r.off), reason)
		}
		r.torn = true
		return chunk{}, io.EOF
	}
}

// tornSpan is how far past a zero header a good chunk may start and the
// zeros still be a torn tail: none in a log written by appending, whose
// size reaches the disk after its data; PreallocWindow in a preallocated
// one (MarkPreallocated).
func (r *Reader) tornSpan() int {
	if r.prealloc {
		return PreallocWindow
	}
	return headerSize
}

// parseChunk checks the chunk at off. A zero header returns ok=false with an
// empty reason (padding or preallocated space).
func parseChunk(data []byte, off int) (chunk, bool, string) {
	if len(data)-off < headerSize {
		return chunk{}, false, "truncated chunk header"
	}
	h := data[off : off+headerSize]
	sum := binary.LittleEndian.Uint32(h[0:4])
	n := int(binary.LittleEndian.Uint16(h[4:6]))
	t := h[6]
	if sum == 0 && n == 0 && t == 0 {
		return chunk{}, false, ""
	}
	if t < typeFull || t > typePrealloc {
		return chunk{}, false, fmt.Sprintf("bad chunk type %d", t)
	}
	end := off + headerSize + n
	if end > len(data) || n > BlockSize-off%BlockSize-headerSize {
		return chunk{}, false, "chunk length past the end of its block or file"
	}
	payload := data[off+headerSize : end]
	if Checksum(t, payload) != sum {
		return chunk{}, false, "checksum mismatch"
	}
	return chunk{typ: t, data: payload, off: off}, true, ""
}

// validChunkAfter reports whether a valid chunk follows the bad one at off:
// the chunk its length field points to, or any later block's first chunk.
// Either means the bad chunk is not merely a torn tail.
func validChunkAfter(data []byte, off int) bool {
	if len(data)-off >= headerSize {
		next := off + headerSize + int(binary.LittleEndian.Uint16(data[off+4:off+6]))
		if next < len(data) && next/BlockSize == off/BlockSize {
			if _, ok, _ := parseChunk(data, next); ok {
				return true
			}
		}
	}
	for b := (off/BlockSize + 1) * BlockSize; b < len(data); b += BlockSize {
		if _, ok, _ := parseChunk(data, b); ok {
			return true
		}
	}
	return false
}

// validChunkFrom returns the offset of the first valid chunk starting at or
// after from, at any byte position: zeroing need not stop at a chunk or
// block boundary. Only headers with a known type and a length that fits
// their block are checksummed, so an all-zero or random tail is cheap.
func validChunkFrom(data []byte, from int) (int, bool) {
	for p := from; p+headerSize <= len(data); p++ {
		t := data[p+6]
		if t < typeFull || t > typePrealloc {
			continue
		}
		n := int(binary.LittleEndian.Uint16(data[p+4 : p+6]))
		if n > BlockSize-p%BlockSize-headerSize || p+headerSize+n > len(data) {
			continue
		}
		if _, ok, _ := parseChunk(data, p); ok {
			return p, true
		}
	}
	return 0, false
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func (r *Reader) corrupt(off int64, reason string) error {
	return &CorruptionError{File: r.name, Offset: off, Reason: reason}
}
