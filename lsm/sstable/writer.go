package sstable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/seed84792017/cellcast/lsm/internal/base"
)

// WriterOptions shape a table. The zero value gets the documented defaults.
type WriterOptions struct {
	// BlockSize is the target size of uncompressed data blocks. Default 4 KiB.
	BlockSize int
	// Compression of data blocks. Default Snappy.
	Compression Compression
	// BloomBitsPerKey sizes the table's key filter. Default 10; negative
	// disables the filter.
	BloomBitsPerKey int
	// Collectors are fresh block property collectors for this table.
	Collectors []BlockPropertyCollector
	// FilterPrefixes, when set, names extra byte strings (typically
	// prefixes) of each user key to add to the bloom filter, so a reader
	// can rule out a whole key range sharing that prefix.
	FilterPrefixes func(userKey []byte, add func(prefix []byte))
}

func (o *WriterOptions) withDefaults() WriterOptions {
	out := *o
	if out.BlockSize <= 0 {
		out.BlockSize = 4 << 10
	}
	if out.BloomBitsPerKey == 0 {
		out.BloomBitsPerKey = 10
	}
	return out
}

// Writer builds a table from entries added in strictly increasing internal
// key order.
type Writer struct {
	w       io.Writer
	opts    WriterOptions
	off     uint64
	data    blockWriter
	index   blockWriter
	scratch []byte
	props   Properties
	// filterHashes holds the hash of each distinct user key and filter
	// prefix, taken as it is added: the filter's size follows from their
	// count, known only at Close. Eight bytes a key, pooled across tables,
	// where copying the keys themselves cost a flush or compaction a
	// growing buffer's copies.
	filterHashes *[]uint64
	// prefixes holds the filter prefixes of this key (as far as named yet)
	// and of the two before it, in the order FilterPrefixes names them;
	// addPrefix is w.addFilterPrefix, bound once.
	prefixes  [3]prefixList
	addPrefix func([]byte)
	lastKey   []byte
	keyBuf    []byte
	hasLast   bool
	smallest  base.InternalKey
	err       error
}

// NewWriter starts a table at the beginning of w.
func NewWriter(w io.Writer, opts WriterOptions) *Writer {
	tw := &Writer{w: w, opts: opts.withDefaults()}
	tw.props.SmallestSeq = base.SeqMax
	tw.addPrefix = tw.addFilterPrefix
	for _, c := range tw.opts.Collectors {
		tw.props.Collectors = append(tw.props.Collectors, c.Name())
	}
	return tw
}

// Add appends an entry. Keys must increase strictly.
func (w *Writer) Add(key base.InternalKey, value []byte) error {
	if w.err != nil {
		return w.err
	}
	enc := key.Encode(w.keyBuf[:0])
	if w.hasLast && base.CompareEncoded(w.lastKey, enc) >= 0 {
		w.err = fmt.Errorf("sstable: keys out of order: %s after %x", key, w.lastKey)
		return w.err
	}
	if !w.hasLast {
		w.smallest = key.Clone()
	}
	if !w.hasLast || !bytes.Equal(userKeyOf(w.lastKey), key.UserKey) {
		w.props.NumKeys++
		w.addFilterKey(key.UserKey)
		if w.opts.FilterPrefixes != nil {
			w.prefixes[0], w.prefixes[1], w.prefixes[2] = w.prefixes[2], w.prefixes[0], w.prefixes[1]
			w.prefixes[0].reset()
			w.opts.FilterPrefixes(key.UserKey, w.addPrefix)
		}
	}
	for _, c := range w.opts.Collectors {
		if err := c.Add(key, value); err != nil {
			w.err = fmt.Errorf("sstable: collector %s: %w", c.Name(), err)
			return w.err
		}
	}
	w.data.add(enc, value)
	w.keyBuf, w.lastKey, w.hasLast = w.lastKey, enc, true
	p := &w.props
	p.NumEntries++
	p.RawKeySize += uint64(len(enc))
	p.RawValueSize += uint64(len(value))
	switch key.Kind() {
	case base.KindDelete:
		p.NumDeletions++
	case base.KindMerge:
		p.NumMerges++
	}
	p.SmallestSeq = min(p.SmallestSeq, key.Seq())
	p.LargestSeq = max(p.LargestSeq, key.Seq())
	if w.data.estimatedSize() >= w.opts.BlockSize {
		return w.flushBlock()
	}
	return nil
}

func (w *Writer) addFilterKey(k []byte) {
	if w.opts.BloomBitsPerKey <= 0 {
		return
	}
	if w.filterHashes == nil {
		w.filterHashes = hashPool.Get().(*[]uint64)
	}
	*w.filterHashes = append(*w.filterHashes, hash64(k))
}

// hashPool keeps filter hash slices from one table to the next; a slice
// past maxPooledHashes (32 MiB) is left to the collector.
var hashPool = sync.Pool{New: func() any { return new([]uint64) }}

const maxPooledHashes = 4 << 20

// releaseHashes gives the filter's hashes back to the pool.
func (w *Writer) releaseHashes() {
	if h := w.filterHashes; h != nil && cap(*h) <= maxPooledHashes {
		*h = (*h)[:0]
		hashPool.Put(h)
	}
	w.filterHashes = nil
}

// addFilterPrefix adds a prefix unless one of the two previous keys named
// it in the same place: sorted keys share their prefixes (ancestor cells)
// with their neighbours, named shallowest first, and a key of the other
// list of the same cell (DualDB) sits between them.
func (w *Writer) addFilterPrefix(p []byte) {
	i := len(w.prefixes[0].ends)
	if !w.prefixes[1].has(i, p) && !w.prefixes[2].has(i, p) {
		w.addFilterKey(p)
	}
	w.prefixes[0].add(p)
}

// prefixList is one key's filter prefixes, back to back.
type prefixList struct {
	buf  []byte
	ends []int
}

func (l *prefixList) reset() { l.buf, l.ends = l.buf[:0], l.ends[:0] }

func (l *prefixList) add(p []byte) {
	l.buf = append(l.buf, p...)
	l.ends = append(l.ends, len(l.buf))
}

// has reports whether the list's i-th prefix is p.
func (l *prefixList) has(i int, p []byte) bool {
	if i >= len(l.ends) {
		return false
	}
	start := 0
	if i > 0 {
		start = l.ends[i-1]
	}
	return bytes.Equal(l.buf[start:l.ends[i]], p)
}

// EstimatedSize is the file size if the table were finished now.
func (w *Writer) EstimatedSize() uint64 {
	return w.off + uint64(w.data.estimatedSize()) + uint64(w.index.estimatedSize())
}

// Entries is the number of entries added.
func (w *Writer) Entries() uint64 { return w.props.NumEntries }

func (w *Writer) writeBlock(raw []byte, c Compression) (handle, error) {
	var stored []byte
	stored, w.scratch = encodeBlock(raw, c, w.scratch)
	h := handle{off: w.off, len: uint64(len(stored) - trailerLen)}
	if _, err := w.w.Write(stored); err != nil {
		return h, err
	}
	w.off += uint64(len(stored))
	return h, nil
}

func (w *Writer) flushBlock() error {
	if w.data.entries == 0 {
		return nil
	}
	h, err := w.writeBlock(w.data.finish(), w.opts.Compression)
	if err != nil {
		w.err = err
		return err
	}
	val := h.encode(nil)
	for _, c := range w.opts.Collectors {
		prop, err := c.FinishDataBlock()
		if err != nil {
			w.err = fmt.Errorf("sstable: collector %s: %w", c.Name(), err)
			return w.err
		}
		val = binary.AppendUvarint(val, uint64(len(prop)))
		val = append(val, prop...)
	}
	w.index.add(w.lastKey, val)
	w.props.NumDataBlocks++
	w.data.reset()
	return nil
}

// Meta describes a finished table.
type Meta struct {
	Size     uint64
	Smallest base.InternalKey
	Largest  base.InternalKey
	Props    Properties
}

// Close writes the filter, properties, index and footer. The caller syncs
// and closes the file.
func (w *Writer) Close() (Meta, error) {
	if w.err != nil {
		return Meta{}, w.err
	}
	if !w.hasLast {
		return Meta{}, fmt.Errorf("sstable: empty table")
	}
	if err := w.flushBlock(); err != nil {
		return Meta{}, err
	}
	w.props.DataSize = w.off
	var f footer
	f.version = FormatVersion
	var err error
	if w.opts.BloomBitsPerKey > 0 {
		var hashes []uint64
		if w.filterHashes != nil {
			hashes = *w.filterHashes
		}
		raw := encodeFilter(hashes, w.opts.BloomBitsPerKey)
		w.releaseHashes()
		w.props.FilterSize = uint64(len(raw))
		if f.filter, err = w.writeBlock(raw, NoCompression); err != nil {
			return Meta{}, err
		}
	}
	w.props.IndexSize = uint64(w.index.estimatedSize())
	for _, c := range w.opts.Collectors {
		prop, err := c.FinishTable()
		if err != nil {
			return Meta{}, fmt.Errorf("sstable: collector %s: %w", c.Name(), err)
		}
		if w.props.User == nil {
			w.props.User = map[string][]byte{}
		}
		w.props.User[c.Name()] = prop
	}
	if f.props, err = w.writeBlock(w.props.encode(), NoCompression); err != nil {
		return Meta{}, err
	}
	if f.index, err = w.writeBlock(w.index.finish(), NoCompression); err != nil {
		return Meta{}, err
	}
	if _, err := w.w.Write(f.encode()); err != nil {
		return Meta{}, err
	}
	w.off += footerLen
	largest, _ := base.DecodeInternalKey(w.lastKey)
	w.err = fmt.Errorf("sstable: writer closed")
	return Meta{Size: w.off, Smallest: w.smallest, Largest: largest.Clone(), Props: w.props}, nil
}
