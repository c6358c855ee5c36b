package sstable

import (
	"bytes"
	"encoding/binary"

	"github.com/seed84792017/cellcast/lsm/internal/base"
)

const restartInterval = 16

// blockWriter builds one block of prefix-compressed entries.
type blockWriter struct {
	buf      []byte
	restarts []uint32
	lastKey  []byte
	counter  int
	entries  int
}

func (w *blockWriter) reset() {
	w.buf = w.buf[:0]
	w.restarts = w.restarts[:0]
	w.lastKey = w.lastKey[:0]
	w.counter = 0
	w.entries = 0
}

func (w *blockWriter) add(key, value []byte) {
	shared := 0
	if w.counter < restartInterval && w.entries > 0 {
		n := min(len(key), len(w.lastKey))
		for shared < n && key[shared] == w.lastKey[shared] {
			shared++
		}
	} else {
		w.restarts = append(w.restarts, uint32(len(w.buf)))
		w.counter = 0
	}
	w.buf = binary.AppendUvarint(w.buf, uint64(shared))
	w.buf = binary.AppendUvarint(w.buf, uint64(len(key)-shared))
	w.buf = binary.AppendUvarint(w.buf, uint64(len(value)))
	w.buf = append(w.buf, key[shared:]...)
	w.buf = append(w.buf, value...)
	w.lastKey = append(w.lastKey[:0], key...)
	w.counter++
	w.entries++
}

// estimatedSize is the size finish would produce.
func (w *blockWriter) estimatedSize() int { return len(w.buf) + 4*len(w.restarts) + 4 }

func (w *blockWriter) finish() []byte {
	if len(w.restarts) == 0 {
		w.restarts = append(w.restarts, 0)
	}
	for _, r := range w.restarts {
		w.buf = binary.LittleEndian.AppendUint32(w.buf, r)
	}
	w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(len(w.restarts)))
	return w.buf
}

// blockIter walks a decoded block. Every read is bounds-checked: a damaged
// block makes the iterator invalid with err set, never panics.
type blockIter struct {
	data        []byte
	restarts    int // offset of the restart array
	numRestarts int
	offset      int // current entry
	next        int // entry after the current one
	key         []byte
	val         []byte
	valid       bool
	err         error
	// file and blockOff name the block in errors.
	file     string
	blockOff int64
}

func (it *blockIter) init(data []byte, file string, blockOff int64) error {
	*it = blockIter{data: data, key: it.key[:0], file: file, blockOff: blockOff}
	if len(data) < 4 {
		return it.corrupt("block shorter than its trailer")
	}
	n := int(binary.LittleEndian.Uint32(data[len(data)-4:]))
	if n == 0 || n > (len(data)-4)/4 {
		return it.corrupt("bad restart count %d", n)
	}
	it.numRestarts = n
	it.restarts = len(data) - 4 - 4*n
	return nil
}

func (it *blockIter) corrupt(format string, args ...any) error {
	it.valid = false
	it.err = base.Corruptf(it.file, it.blockOff, "block: "+format, args...)
	return it.err
}

func (it *blockIter) restartOffset(i int) int {
	return int(binary.LittleEndian.Uint32(it.data[it.restarts+4*i:]))
}

// decodeAt parses the entry at off, rebuilding the key from it.key.
func (it *blockIter) decodeAt(off int) bool {
	if off >= it.restarts {
		it.valid = false
		return false
	}
	p := it.data[off:it.restarts]
	var shared, unshared, vlen uint64
	var h int
	if len(p) >= 3 && (p[0]|p[1]|p[2])&0x80 == 0 {
		// The usual header: three one-byte varints.
		shared, unshared, vlen, h = uint64(p[0]), uint64(p[1]), uint64(p[2]), 3
	} else {
		var n1, n2, n3 int
		shared, n1 = binary.Uvarint(p)
		unshared, n2 = readUvarint(p, n1)
		vlen, n3 = readUvarint(p, n1+n2)
		if n1 <= 0 || n2 <= 0 || n3 <= 0 {
			it.corrupt("bad entry header at %d", off)
			return false
		}
		h = n1 + n2 + n3
	}
	if shared > uint64(len(it.key)) || unshared > uint64(len(p)-h) || vlen > uint64(len(p)-h)-unshared {
		it.corrupt("entry at %d overruns the block", off)
		return false
	}
	it.key = append(it.key[:shared], p[h:h+int(unshared)]...)
	vs := h + int(unshared)
	it.val = p[vs : vs+int(vlen) : vs+int(vlen)]
	it.offset = off
	it.next = off + vs + int(vlen)
	it.valid = true
	return true
}

func readUvarint(p []byte, at int) (uint64, int) {
	if at <= 0 || at > len(p) {
		return 0, 0
	}
	return binary.Uvarint(p[at:])
}

func (it *blockIter) first() {
	if it.err != nil {
		return
	}
	it.key = it.key[:0]
	it.decodeAt(0)
}

// keyAtRestart returns the full key stored at restart point i.
func (it *blockIter) keyAtRestart(i int) ([]byte, bool) {
	off := it.restartOffset(i)
	if off >= it.restarts {
		it.corrupt("restart %d points past the entries", i)
		return nil, false
	}
	p := it.data[off:it.restarts]
	shared, n1 := binary.Uvarint(p)
	unshared, n2 := readUvarint(p, n1)
	_, n3 := readUvarint(p, n1+n2)
	if n1 <= 0 || n2 <= 0 || n3 <= 0 || shared != 0 || unshared > uint64(len(p)-n1-n2-n3) {
		it.corrupt("bad restart entry %d", i)
		return nil, false
	}
	h := n1 + n2 + n3
	return p[h : h+int(unshared)], true
}

// seekGE positions at the first entry whose user key is >= userKey.
func (it *blockIter) seekGE(userKey []byte) {
	if it.err != nil {
		return
	}
	// Binary search for the last restart whose key's user key is < userKey.
	lo, hi := 0, it.numRestarts-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		k, ok := it.keyAtRestart(mid)
		if !ok {
			return
		}
		if bytes.Compare(userKeyOf(k), userKey) < 0 {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	it.key = it.key[:0]
	if !it.decodeAt(it.restartOffset(lo)) {
		return
	}
	for bytes.Compare(userKeyOf(it.key), userKey) < 0 {
		if !it.nextEntry() {
			return
		}
	}
}

func (it *blockIter) nextEntry() bool {
	if !it.valid {
		return false
	}
	return it.decodeAt(it.next)
}

func userKeyOf(encoded []byte) []byte {
	if len(encoded) < base.TrailerLen {
		return encoded
	}
	return encoded[:len(encoded)-base.TrailerLen]
}
