package lsm

import (
	"encoding/binary"
	"fmt"

	"github.com/seed84792017/cellcast/lsm/internal/base"
)

const batchHeaderLen = 12 // sequence number (8) and count (4)

// Batch collects writes applied atomically by DB.Apply. Its encoding is the
// WAL record: header (seq, count) then per entry a kind byte, the key and,
// except for deletes, the value, each length-prefixed.
type Batch struct {
	data  []byte
	count uint32
}

// NewBatch returns an empty batch.
func NewBatch() *Batch { return &Batch{} }

func (b *Batch) init() {
	if len(b.data) > 0 {
		return
	}
	if cap(b.data) < batchHeaderLen {
		b.data = make([]byte, 0, 256)
	}
	b.data = append(b.data[:0], make([]byte, batchHeaderLen)...)
}

func (b *Batch) add(kind base.Kind, key, value []byte) error {
	if len(key) == 0 {
		return ErrEmptyKey
	}
	if len(key) > MaxKeySize {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrKeyTooLarge, len(key), MaxKeySize)
	}
	if len(value) > MaxValueSize {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrValueTooLarge, len(value), MaxValueSize)
	}
	if len(b.data)+len(key)+len(value)+2*binary.MaxVarintLen32+1 > MaxBatchSize {
		return fmt.Errorf("%w: limit %d bytes", ErrBatchTooLarge, MaxBatchSize)
	}
	b.init()
	b.data = append(b.data, byte(kind))
	b.data = binary.AppendUvarint(b.data, uint64(len(key)))
	b.data = append(b.data, key...)
	if kind != base.KindDelete {
		b.data = binary.AppendUvarint(b.data, uint64(len(value)))
		b.data = append(b.data, value...)
	}
	b.count++
	binary.LittleEndian.PutUint32(b.data[8:12], b.count)
	return nil
}

// Set stores value under key, replacing what was there.
func (b *Batch) Set(key, value []byte) error { return b.add(base.KindSet, key, value) }

// Delete removes key.
func (b *Batch) Delete(key []byte) error { return b.add(base.KindDelete, key, nil) }

// Merge appends a fragment to key's value list without reading it.
func (b *Batch) Merge(key, fragment []byte) error { return b.add(base.KindMerge, key, fragment) }

// Count is the number of entries.
func (b *Batch) Count() int { return int(b.count) }

// Empty reports whether the batch holds no entries.
func (b *Batch) Empty() bool { return b.count == 0 }

// Size is the encoded size in bytes.
func (b *Batch) Size() int { return len(b.data) }

// Reset empties the batch for reuse.
func (b *Batch) Reset() {
	b.data = b.data[:0]
	b.count = 0
}

func (b *Batch) setSeq(seq uint64) { binary.LittleEndian.PutUint64(b.data[0:8], seq) }

// SeqNum is the sequence number DB.Apply gave the batch's first entry (the
// others follow it); zero before the batch is applied.
func (b *Batch) SeqNum() uint64 {
	if len(b.data) < batchHeaderLen {
		return 0
	}
	return binary.LittleEndian.Uint64(b.data[0:8])
}

// batchReader decodes an encoded batch, e.g. a WAL record.
type batchReader struct {
	data  []byte
	seq   uint64
	count uint32
}

func newBatchReader(data []byte) (batchReader, error) {
	if len(data) < batchHeaderLen {
		return batchReader{}, fmt.Errorf("batch of %d bytes is shorter than its header", len(data))
	}
	return batchReader{
		data:  data[batchHeaderLen:],
		seq:   binary.LittleEndian.Uint64(data[0:8]),
		count: binary.LittleEndian.Uint32(data[8:12]),
	}, nil
}

// next returns the next entry; ok is false at the end. A malformed entry is
// an error.
func (r *batchReader) next() (kind base.Kind, key, value []byte, ok bool, err error) {
	if len(r.data) == 0 {
		return 0, nil, nil, false, nil
	}
	kind = base.Kind(r.data[0])
	if !kind.Valid() {
		return 0, nil, nil, false, fmt.Errorf("bad kind %d in batch", kind)
	}
	p := r.data[1:]
	key, p, err = takeBytes(p)
	if err != nil {
		return 0, nil, nil, false, err
	}
	if kind != base.KindDelete {
		if value, p, err = takeBytes(p); err != nil {
			return 0, nil, nil, false, err
		}
	}
	r.data = p
	return kind, key, value, true, nil
}

func takeBytes(p []byte) ([]byte, []byte, error) {
	n, m := binary.Uvarint(p)
	if m <= 0 || n > uint64(len(p)-m) {
		return nil, nil, fmt.Errorf("truncated entry in batch")
	}
	return p[m : m+int(n)], p[m+int(n):], nil
}
