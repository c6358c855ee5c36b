package manifest

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/seed84792017/cellcast/lsm/internal/base"
)

// NumLevels is the number of levels, L0 through L6.
const NumLevels = 7

// DeletedFile names a file an edit removes.
type DeletedFile struct {
	Level int
	Num   uint64
}

// NewFile is a file an edit adds.
type NewFile struct {
	Level int
	Meta  *FileMetadata
}

// VersionEdit is one step from a Version to the next.
type VersionEdit struct {
	LogNum      uint64 // WALs numbered below LogNum are no longer needed
	NextFileNum uint64
	LastSeq     uint64
	Deleted     []DeletedFile
	Added       []NewFile
}

const (
	tagLogNum      = 1
	tagNextFileNum = 2
	tagLastSeq     = 3
	tagDeleted     = 4
	tagAdded       = 5
)

// ErrBadEdit is matched by errors decoding a damaged edit.
var ErrBadEdit = errors.New("manifest: bad version edit")

// Encode serializes the edit.
func (e *VersionEdit) Encode() []byte {
	var b []byte
	put := func(v uint64) { b = binary.AppendUvarint(b, v) }
	putBytes := func(p []byte) { put(uint64(len(p))); b = append(b, p...) }
	if e.LogNum != 0 {
		put(tagLogNum)
		put(e.LogNum)
	}
	if e.NextFileNum != 0 {
		put(tagNextFileNum)
		put(e.NextFileNum)
	}
	if e.LastSeq != 0 {
		put(tagLastSeq)
		put(e.LastSeq)
	}
	for _, d := range e.Deleted {
		put(tagDeleted)
		put(uint64(d.Level))
		put(d.Num)
	}
	for _, a := range e.Added {
		m := a.Meta
		put(tagAdded)
		put(uint64(a.Level))
		put(m.Num)
		put(m.Size)
		putBytes(m.Smallest.Encode(nil))
		putBytes(m.Largest.Encode(nil))
		put(m.SmallestSeq)
		put(m.LargestSeq)
	}
	return b
}

// Decode parses an edit produced by Encode.
func (e *VersionEdit) Decode(b []byte) error {
	*e = VersionEdit{}
	get := func() (uint64, error) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, fmt.Errorf("%w: truncated varint", ErrBadEdit)
		}
		b = b[n:]
		return v, nil
	}
	getKey := func() (base.InternalKey, error) {
		n, err := get()
		if err != nil {
			return base.InternalKey{}, err
		}
		if n > uint64(len(b)) {
			return base.InternalKey{}, fmt.Errorf("%w: key past the end", ErrBadEdit)
		}
		k, ok := base.DecodeInternalKey(b[:n])
		if !ok {
			return base.InternalKey{}, fmt.Errorf("%w: short key", ErrBadEdit)
		}
		b = b[n:]
		return k.Clone(), nil
	}
	getLevel := func() (int, error) {
		l, err := get()
		if err == nil && l >= NumLevels {
			err = fmt.Errorf("%w: level %d", ErrBadEdit, l)
		}
		return int(l), err
	}
	for len(b) > 0 {
		tag, err := get()
		if err != nil {
			return err
		}
		switch tag {
		case tagLogNum:
			e.LogNum, err = get()
		case tagNextFileNum:
			e.NextFileNum, err = get()
		case tagLastSeq:
			e.LastSeq, err = get()
		case tagDeleted:
			var d DeletedFile
			if d.Level, err = getLevel(); err == nil {
				d.Num, err = get()
			}
			e.Deleted = append(e.Deleted, d)
		case tagAdded:
			m := &FileMetadata{}
			var lvl int
			if lvl, err = getLevel(); err != nil {
				return err
			}
			if m.Num, err = get(); err != nil {
				return err
			}
			if m.Size, err = get(); err != nil {
				return err
			}
			if m.Smallest, err = getKey(); err != nil {
				return err
			}
			if m.Largest, err = getKey(); err != nil {
				return err
			}
			if m.SmallestSeq, err = get(); err != nil {
				return err
			}
			m.LargestSeq, err = get()
			e.Added = append(e.Added, NewFile{Level: lvl, Meta: m})
		default:
			return fmt.Errorf("%w: unknown tag %d", ErrBadEdit, tag)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
