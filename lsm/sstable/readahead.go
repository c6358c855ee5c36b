package sstable

// readahead turns an iterator's run of block reads into a few large ones,
// as Pebble's does: once raAfter blocks in a row have come from disk, a
// miss reads the blocks after it too, in a window that doubles from raMin
// to raMax. A scan or a compaction then costs one pread per window, not
// one per 4 KiB block; seeks, which read a block or two, never start one.
type readahead struct {
	buf  []byte
	off  uint64 // file offset of buf[0]
	next int    // the block that would continue the run
	run  int    // blocks read from disk in a row
}

const (
	raAfter = 2
	raMin   = 64 << 10
	raMax   = 256 << 10
)

// stored returns block i's stored bytes (payload and trailer): from the
// window, from a new window, or read alone into buf. window reports that
// they lie in ra.buf, which the next window read overwrites.
func (ra *readahead) stored(r *Reader, i int, buf []byte) (stored []byte, window bool, err error) {
	h := r.index[i].h
	n := h.len + trailerLen
	if i == ra.next {
		ra.run++
	} else {
		ra.run = 1
	}
	ra.next = i + 1
	if h.off >= ra.off && h.off+n <= ra.off+uint64(len(ra.buf)) {
		return ra.buf[h.off-ra.off : h.off-ra.off+n], true, nil
	}
	if ra.run <= raAfter {
		stored, err = r.readStored(h, buf)
		return stored, false, err
	}
	size := uint64(min(max(2*len(ra.buf), raMin), raMax))
	end := max(min(h.off+size, r.dataEnd), h.off+n)
	if uint64(cap(ra.buf)) < end-h.off {
		ra.buf = make([]byte, end-h.off)
	}
	ra.buf = ra.buf[:end-h.off]
	if _, err := r.f.ReadAt(ra.buf, int64(h.off)); err != nil {
		ra.buf = ra.buf[:0]
		return nil, false, readError(r.name, int64(h.off), "blocks", err)
	}
	ra.off = h.off
	r.stats.BytesFromDisk.Add(int64(len(ra.buf)))
	return ra.buf[:n], true, nil
}
