package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/seed84792017/cellcast/lsm/internal/base"
	"github.com/seed84792017/cellcast/lsm/vfs"
)

// ReadStats counts reader activity; one instance may be shared by readers.
type ReadStats struct {
	BlocksFromCache atomic.Int64
	BlocksFromDisk  atomic.Int64
	BytesFromDisk   atomic.Int64
	// FilterNegatives counts lookups the bloom filter answered "absent".
	FilterNegatives atomic.Int64
	// FilterPositives counts lookups it answered "maybe present".
	FilterPositives atomic.Int64
}

// ReaderOptions configure Open.
type ReaderOptions struct {
	// Cache, when set, holds verified data blocks under CacheID and FileNum.
	Cache   *Cache
	CacheID uint64
	FileNum uint64
	// Stats, when set, receives counts.
	Stats *ReadStats
}

type indexEntry struct {
	lastKey     []byte // encoded internal key
	lastUserKey []byte
	h           handle
	props       [][]byte
}

// Reader reads one table. It is safe for concurrent use.
type Reader struct {
	f     vfs.File
	name  string
	opts  ReaderOptions
	index []indexEntry
	// shared and heads let findBlock search 8-byte integers in one array
	// rather than chase a pointer per step: shared is the prefix every
	// block's last user key has in common, heads[i] the next 8 bytes of
	// block i's (zero-padded, big-endian).
	shared  []byte
	heads   []uint64
	dataEnd uint64 // where the last data block ends
	filter  *filter
	props   Properties
	collIdx map[string]int
	stats   *ReadStats
}

// Open verifies the footer, index, properties and filter of a table of size
// bytes and returns a reader. The reader owns f and closes it in Close.
func Open(f vfs.File, name string, size int64, opts ReaderOptions) (*Reader, error) {
	r := &Reader{f: f, name: name, opts: opts, stats: opts.Stats}
	if r.stats == nil {
		r.stats = &ReadStats{}
	}
	if size < footerLen {
		return nil, base.Corruptf(name, 0, "file of %d bytes is too small for a table", size)
	}
	buf := make([]byte, footerLen)
	if _, err := f.ReadAt(buf, size-footerLen); err != nil {
		return nil, readError(name, size-footerLen, "footer", err)
	}
	ft, err := decodeFooter(buf, name, size-footerLen)
	if err != nil {
		return nil, err
	}
	limit := uint64(size - footerLen)
	for _, h := range []handle{ft.props, ft.index} {
		if !h.within(limit) {
			return nil, base.Corruptf(name, int64(h.off), "block handle past the end of the file")
		}
	}
	rawProps, err := r.readRaw(ft.props)
	if err != nil {
		return nil, err
	}
	if r.props, err = decodeProperties(rawProps, name, int64(ft.props.off)); err != nil {
		return nil, err
	}
	r.collIdx = make(map[string]int, len(r.props.Collectors))
	for i, n := range r.props.Collectors {
		r.collIdx[n] = i
	}
	rawIndex, err := r.readRaw(ft.index)
	if err != nil {
		return nil, err
	}
	if err := r.decodeIndex(rawIndex, int64(ft.index.off), limit); err != nil {
		return nil, err
	}
	if ft.filter.len > 0 {
		if !ft.filter.within(limit) {
			return nil, base.Corruptf(name, int64(ft.filter.off), "filter handle past the end of the file")
		}
		raw, err := r.readRaw(ft.filter)
		if err != nil {
			return nil, err
		}
		if r.filter, err = decodeFilter(raw, name, int64(ft.filter.off)); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// readRaw reads and verifies a block into fresh memory that the caller may
// keep (the block cache does).
func (r *Reader) readRaw(h handle) ([]byte, error) {
	bp := storedPool.Get().(*[]byte)
	defer storedPool.Put(bp)
	stored, err := r.readStored(h, *bp)
	*bp = stored
	if err != nil {
		return nil, err
	}
	return r.decodeOwned(stored, h)
}

// decodeOwned verifies and decompresses a block read into a reused buffer,
// returning memory of its own that the caller may keep.
func (r *Reader) decodeOwned(stored []byte, h handle) ([]byte, error) {
	raw, err := decodeBlock(stored, nil, r.name, int64(h.off))
	if err == nil && sameArray(raw, stored) {
		// Uncompressed: the payload lives in the reused buffer; copy it out.
		raw = append([]byte(nil), raw...)
	}
	return raw, err
}

func sameArray(a, b []byte) bool { return len(a) > 0 && len(b) > 0 && &a[0] == &b[0] }

// readError describes a failed read at off. Running off the end of the file
// is corruption (the table is shorter than its metadata says); any other
// error is the device's, wrapped so callers can match it (EIO) and not
// mistaken for bad data.
func readError(name string, off int64, what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return base.Corruptf(name, off, "reading %s: %v", what, err)
	}
	return fmt.Errorf("sstable: reading %s of %s at offset %d: %w", what, name, off, err)
}

// storedPool recycles the buffers blocks are read into before decoding.
var storedPool = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

func (r *Reader) readStored(h handle, buf []byte) ([]byte, error) {
	n := int(h.len + trailerLen)
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := r.f.ReadAt(buf, int64(h.off)); err != nil {
		return buf, readError(r.name, int64(h.off), "block", err)
	}
	r.stats.BytesFromDisk.Add(int64(n))
	return buf, nil
}

func (r *Reader) decodeIndex(raw []byte, off int64, limit uint64) error {
	var it blockIter
	if err := it.init(raw, r.name, off); err != nil {
		return err
	}
	ncoll := len(r.props.Collectors)
	for it.first(); it.valid; it.nextEntry() {
		e := indexEntry{lastKey: append([]byte(nil), it.key...)}
		if len(e.lastKey) < base.TrailerLen {
			return base.Corruptf(r.name, off, "index key shorter than a trailer")
		}
		e.lastUserKey = userKeyOf(e.lastKey)
		h, n := decodeHandle(it.val)
		if n == 0 || !h.within(limit) {
			return base.Corruptf(r.name, off, "bad data block handle in index")
		}
		e.h = h
		rest := it.val[n:]
		for i := 0; i < ncoll; i++ {
			l, m := binary.Uvarint(rest)
			if m <= 0 || l > uint64(len(rest)-m) {
				return base.Corruptf(r.name, off, "bad block property in index")
			}
			e.props = append(e.props, append([]byte(nil), rest[m:m+int(l)]...))
			rest = rest[m+int(l):]
		}
		r.index = append(r.index, e)
	}
	if it.err != nil {
		return it.err
	}
	if len(r.index) == 0 {
		return base.Corruptf(r.name, off, "empty index")
	}
	first, last := r.index[0].lastUserKey, r.index[len(r.index)-1].lastUserKey
	n := 0
	for n < len(first) && n < len(last) && first[n] == last[n] {
		n++
	}
	r.shared = first[:n]
	lastBlock := r.index[len(r.index)-1].h
	r.dataEnd = lastBlock.off + lastBlock.len + trailerLen
	r.heads = make([]uint64, len(r.index))
	for i := range r.index {
		r.heads[i] = head(r.index[i].lastUserKey[n:])
	}
	return nil
}

// head is b's first 8 bytes as a big-endian integer, zero-padded: for
// keys a <= b, head(a) <= head(b).
func head(b []byte) uint64 {
	if len(b) >= 8 {
		return binary.BigEndian.Uint64(b)
	}
	var buf [8]byte
	copy(buf[:], b)
	return binary.BigEndian.Uint64(buf[:])
}

// Close closes the file.
func (r *Reader) Close() error { return r.f.Close() }

// Name is the file name given to Open.
func (r *Reader) Name() string { return r.name }

// Properties returns the table's properties.
func (r *Reader) Properties() *Properties { return &r.props }

// TableProperty returns the per-table summary of a collector, if any.
func (r *Reader) TableProperty(collector string) ([]byte, bool) {
	v, ok := r.props.User[collector]
	return v, ok
}

// NumBlocks is the number of data blocks.
func (r *Reader) NumBlocks() int { return len(r.index) }

// BlockProperty returns the summary a collector wrote for data block i.
func (r *Reader) BlockProperty(i int, collector string) ([]byte, bool) {
	j, ok := r.collIdx[collector]
	if !ok || i < 0 || i >= len(r.index) {
		return nil, false
	}
	return r.index[i].props[j], true
}

// MayContain consults the bloom filter; without one it answers true.
func (r *Reader) MayContain(userKey []byte) bool {
	if r.filter == nil {
		return true
	}
	if r.filter.mayContain(userKey) {
		r.stats.FilterPositives.Add(1)
		return true
	}
	r.stats.FilterNegatives.Add(1)
	return false
}

// TableIntersects applies filters to the table-level summaries.
func (r *Reader) TableIntersects(filters []BlockPropertyFilter) (bool, error) {
	for _, f := range filters {
		prop, ok := r.props.User[f.Name()]
		if !ok {
			continue
		}
		in, err := f.Intersects(prop)
		if err != nil || !in {
			return false, err
		}
	}
	return true, nil
}

func (r *Reader) blockIntersects(i int, filters []BlockPropertyFilter) (bool, error) {
	for _, f := range filters {
		j, ok := r.collIdx[f.Name()]
		if !ok {
			continue
		}
		in, err := f.Intersects(r.index[i].props[j])
		if err != nil || !in {
			return false, err
		}
	}
	return true, nil
}

// dataBlockNoCache reads block i into the iterator's own buffers, leaving
// the block cache alone: a compaction reads each block once.
func (r *Reader) dataBlockNoCache(i int, it *Iter) ([]byte, error) {
	h := r.index[i].h
	stored, window, err := it.ra.stored(r, i, it.stored)
	if err != nil {
		return nil, err
	}
	if !window {
		it.stored = stored
	}
	r.stats.BlocksFromDisk.Add(1)
	raw, err := decodeBlock(stored, it.raw, r.name, int64(h.off))
	if err == nil && !sameArray(raw, stored) {
		it.raw = raw // keep the (maybe grown) decode buffer
	}
	return raw, err
}

// dataBlock returns the verified, decompressed data block i, read through
// the block cache and, on a miss, ra.
func (r *Reader) dataBlock(i int, ra *readahead) ([]byte, error) {
	h := r.index[i].h
	c := r.opts.Cache
	if c != nil {
		if b := c.Get(r.opts.CacheID, r.opts.FileNum, h.off); b != nil {
			r.stats.BlocksFromCache.Add(1)
			return b, nil
		}
	}
	bp := storedPool.Get().(*[]byte)
	defer storedPool.Put(bp)
	stored, window, err := ra.stored(r, i, *bp)
	if err != nil {
		return nil, err
	}
	if !window {
		*bp = stored
	}
	raw, err := r.decodeOwned(stored, h)
	if err != nil {
		return nil, err
	}
	r.stats.BlocksFromDisk.Add(1)
	if c != nil {
		c.Set(r.opts.CacheID, r.opts.FileNum, h.off, raw)
	}
	return raw, nil
}

// findBlock returns the first block whose last user key is >= userKey.
// Every last key begins with r.shared, so a key that does not sorts before
// or after them all; otherwise the heads narrow the search to the blocks
// whose next 8 bytes tie with the key's, and only those compare in full.
func (r *Reader) findBlock(userKey []byte) int {
	n := len(r.shared)
	if len(userKey) < n || !bytes.Equal(userKey[:n], r.shared) {
		if bytes.Compare(userKey, r.shared) < 0 {
			return 0
		}
		return len(r.index)
	}
	h := head(userKey[n:])
	lo, _ := slices.BinarySearch(r.heads, h)
	hi := lo + sort.Search(len(r.heads)-lo, func(i int) bool { return r.heads[lo+i] > h })
	return lo + sort.Search(hi-lo, func(i int) bool {
		return bytes.Compare(r.index[lo+i].lastUserKey, userKey) >= 0
	})
}

// Iter walks a table's entries in internal-key order, optionally skipping
// blocks whose properties do not intersect the filters.
type Iter struct {
	r       *Reader
	filters []BlockPropertyFilter
	// noCache iterators own their block buffers: values are valid only
	// until the iterator leaves the block.
	noCache     bool
	stored, raw []byte
	ra          readahead
	bi          int
	blk         blockIter
	key         base.InternalKey
	valid       bool
	err         error
}

// NewIter returns an unpositioned iterator. Its values stay valid after
// it moves on (blocks are immutable and shared through the cache).
func (r *Reader) NewIter(filters []BlockPropertyFilter) *Iter {
	it := &Iter{}
	r.InitIter(it, filters)
	return it
}

// InitIter makes it an unpositioned iterator over r, as NewIter does, in
// place and keeping the buffers it grew: one Iter serves a level's tables
// one after another, or a point read on the stack, without allocating.
func (r *Reader) InitIter(it *Iter, filters []BlockPropertyFilter) { it.reset(r, filters, false) }

// InitCompactionIter makes it an iterator for one sequential pass that
// bypasses the block cache and reuses its buffers: a Value is valid only
// until the next move.
func (r *Reader) InitCompactionIter(it *Iter) { it.reset(r, nil, true) }

// Detach lets go of the iterator's table and its readahead window (up to
// 256 KiB), keeping its small buffers for the next InitIter: an idle
// iterator kept for reuse pins no reader and little memory.
func (it *Iter) Detach() {
	it.reset(nil, nil, false)
	it.ra.buf = nil
}

func (it *Iter) reset(r *Reader, filters []BlockPropertyFilter, noCache bool) {
	*it = Iter{r: r, filters: filters, noCache: noCache,
		stored: it.stored[:0], raw: it.raw[:0],
		ra:  readahead{buf: it.ra.buf[:0]},
		blk: blockIter{key: it.blk.key[:0]}}
}

// loadBlock positions at the first entry of the first usable block at or
// after bi.
func (it *Iter) loadBlock(bi int) bool {
	for ; bi < len(it.r.index); bi++ {
		if len(it.filters) > 0 {
			in, err := it.r.blockIntersects(bi, it.filters)
			if err != nil {
				it.fail(err)
				return false
			}
			if !in {
				continue
			}
		}
		var data []byte
		var err error
		if it.noCache {
			data, err = it.r.dataBlockNoCache(bi, it)
		} else {
			data, err = it.r.dataBlock(bi, &it.ra)
		}
		if err != nil {
			it.fail(err)
			return false
		}
		if err := it.blk.init(data, it.r.name, int64(it.r.index[bi].h.off)); err != nil {
			it.fail(err)
			return false
		}
		it.bi = bi
		return true
	}
	it.bi = len(it.r.index)
	it.valid = false
	return false
}

func (it *Iter) fail(err error) {
	it.err = err
	it.valid = false
}

// settle moves past exhausted blocks and decodes the current key.
func (it *Iter) settle() {
	for !it.blk.valid {
		if it.blk.err != nil {
			it.fail(it.blk.err)
			return
		}
		if !it.loadBlock(it.bi + 1) {
			return
		}
		it.blk.first()
	}
	k, ok := base.DecodeInternalKey(it.blk.key)
	if !ok {
		it.fail(base.Corruptf(it.r.name, it.blk.blockOff, "key shorter than a trailer"))
		return
	}
	it.key = k
	it.valid = true
}

// First moves to the first entry.
func (it *Iter) First() {
	it.err, it.valid = nil, false
	if !it.loadBlock(0) {
		return
	}
	it.blk.first()
	it.settle()
}

// SeekGE moves to the first entry whose user key is >= userKey.
func (it *Iter) SeekGE(userKey []byte) {
	it.err, it.valid = nil, false
	if !it.loadBlock(it.r.findBlock(userKey)) {
		return
	}
	it.blk.seekGE(userKey)
	it.settle()
}

// Next moves to the next entry.
func (it *Iter) Next() {
	if !it.valid {
		return
	}
	it.blk.nextEntry()
	it.settle()
}

// Valid reports whether the iterator is at an entry.
func (it *Iter) Valid() bool { return it.valid }

// Key returns the current key; it is valid until the next move.
func (it *Iter) Key() base.InternalKey { return it.key }

// Value returns the current value; it is valid until the next move.
func (it *Iter) Value() []byte { return it.blk.val }

// Error returns the error that stopped the iterator, if any.
func (it *Iter) Error() error { return it.err }
