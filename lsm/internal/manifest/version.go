package manifest

import (
	"bytes"
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/seed84792017/cellcast/lsm/internal/base"
)

// FileMetadata describes one table file.
type FileMetadata struct {
	Num         uint64
	Size        uint64
	Smallest    base.InternalKey
	Largest     base.InternalKey
	SmallestSeq uint64
	LargestSeq  uint64

	// refs counts the Versions holding the file; at zero it is obsolete.
	refs atomic.Int32
	// Compacting is set, under the DB mutex, while a compaction uses the file.
	Compacting bool
}

func (m *FileMetadata) String() string {
	return fmt.Sprintf("%06d:[%s-%s]", m.Num, m.Smallest, m.Largest)
}

// Overlaps reports whether the file's user-key range meets [lo, hi]
// (inclusive; nil means unbounded).
func (m *FileMetadata) Overlaps(lo, hi []byte) bool {
	if hi != nil && bytes.Compare(m.Smallest.UserKey, hi) > 0 {
		return false
	}
	if lo != nil && bytes.Compare(m.Largest.UserKey, lo) < 0 {
		return false
	}
	return true
}

// Version is an immutable set of files per level.
type Version struct {
	Levels [NumLevels][]*FileMetadata
	// L0Sublevels is Levels[0] sorted into sublevels, oldest first.
	L0Sublevels [][]*FileMetadata
	refs        atomic.Int32
}

// Ref adds a reference.
func (v *Version) Ref() { v.refs.Add(1) }

// Unref drops a reference. When the last one goes, it returns the files no
// Version holds any more: they are obsolete and may be deleted.
func (v *Version) Unref() []*FileMetadata {
	if v.refs.Add(-1) != 0 {
		return nil
	}
	var obsolete []*FileMetadata
	for _, files := range v.Levels {
		for _, f := range files {
			if f.refs.Add(-1) == 0 {
				obsolete = append(obsolete, f)
			}
		}
	}
	return obsolete
}

// Refs returns the reference count, for tests.
func (v *Version) Refs() int32 { return v.refs.Load() }

// Apply returns the Version that results from applying edits to v, with one
// reference held by the caller. v is unchanged.
func (v *Version) Apply(edits ...*VersionEdit) (*Version, error) {
	deleted := map[DeletedFile]bool{}
	nv := &Version{}
	for _, e := range edits {
		for _, d := range e.Deleted {
			deleted[d] = true
		}
	}
	for lvl := range v.Levels {
		for _, f := range v.Levels[lvl] {
			if !deleted[DeletedFile{lvl, f.Num}] {
				nv.Levels[lvl] = append(nv.Levels[lvl], f)
			}
		}
	}
	for _, e := range edits {
		for _, a := range e.Added {
			if deleted[DeletedFile{a.Level, a.Meta.Num}] {
				continue
			}
			nv.Levels[a.Level] = append(nv.Levels[a.Level], a.Meta)
		}
	}
	if err := nv.sortAndCheck(); err != nil {
		return nil, err
	}
	for _, files := range nv.Levels {
		for _, f := range files {
			f.refs.Add(1)
		}
	}
	nv.refs.Store(1)
	return nv, nil
}

func (v *Version) sortAndCheck() error {
	l0 := v.Levels[0]
	sort.Slice(l0, func(i, j int) bool {
		if l0[i].LargestSeq != l0[j].LargestSeq {
			return l0[i].LargestSeq < l0[j].LargestSeq
		}
		return l0[i].Num < l0[j].Num
	})
	v.L0Sublevels = Sublevels(l0)
	for lvl := 1; lvl < NumLevels; lvl++ {
		files := v.Levels[lvl]
		sort.Slice(files, func(i, j int) bool { return base.Compare(files[i].Smallest, files[j].Smallest) < 0 })
		for i := 1; i < len(files); i++ {
			if bytes.Compare(files[i-1].Largest.UserKey, files[i].Smallest.UserKey) >= 0 {
				return fmt.Errorf("manifest: L%d files %s and %s overlap", lvl, files[i-1], files[i])
			}
		}
	}
	return nil
}

// Overlapping returns the files of a level that meet [lo, hi] (inclusive,
// nil unbounded). For L0 the range grows to cover every overlapping file, so
// a compaction never leaves an older version of a key above a newer one.
func (v *Version) Overlapping(level int, lo, hi []byte) []*FileMetadata {
	files := v.Levels[level]
	if level > 0 {
		i := sort.Search(len(files), func(i int) bool {
			return lo == nil || bytes.Compare(files[i].Largest.UserKey, lo) >= 0
		})
		var out []*FileMetadata
		for ; i < len(files) && files[i].Overlaps(lo, hi); i++ {
			out = append(out, files[i])
		}
		return out
	}
	for {
		var out []*FileMetadata
		grew := false
		for _, f := range files {
			if !f.Overlaps(lo, hi) {
				continue
			}
			out = append(out, f)
			if lo != nil && bytes.Compare(f.Smallest.UserKey, lo) < 0 {
				lo, grew = f.Smallest.UserKey, true
			}
			if hi != nil && bytes.Compare(f.Largest.UserKey, hi) > 0 {
				hi, grew = f.Largest.UserKey, true
			}
		}
		if !grew {
			return out
		}
	}
}

// LevelSize is the total size of a level's files.
func (v *Version) LevelSize(level int) uint64 {
	var n uint64
	for _, f := range v.Levels[level] {
		n += f.Size
	}
	return n
}

// NumFiles is the number of files at a level.
func (v *Version) NumFiles(level int) int { return len(v.Levels[level]) }

// KeyRange returns the smallest and largest user keys over files.
func KeyRange(files ...[]*FileMetadata) (lo, hi []byte) {
	first := true
	for _, fs := range files {
		for _, f := range fs {
			if first || bytes.Compare(f.Smallest.UserKey, lo) < 0 {
				lo = f.Smallest.UserKey
			}
			if first || bytes.Compare(f.Largest.UserKey, hi) > 0 {
				hi = f.Largest.UserKey
			}
			first = false
		}
	}
	return lo, hi
}
