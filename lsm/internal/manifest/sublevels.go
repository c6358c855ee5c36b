package manifest

import (
	"bytes"
	"sort"
)

// A flush is cut at the base level's table boundaries, so L0 holds many
// small tables. Tables of one flush never overlap, and a later flush's
// tables are newer than every earlier one's, so L0 can be read as a stack
// of sublevels, as Pebble's L0 is: each sublevel a sorted run of disjoint
// tables, read like a level, and a key's versions newer in each sublevel
// up. A seek then costs a block per sublevel, not one per table.

// Sublevels sorts files (L0 tables, oldest first by LargestSeq) into
// sublevels, oldest first. A table goes one above the highest sublevel
// holding a table it overlaps, so of two overlapping tables the newer is
// always in the higher sublevel. Each sublevel is sorted by key.
func Sublevels(files []*FileMetadata) [][]*FileMetadata {
	var subs [][]*FileMetadata
	for _, f := range files {
		s := len(subs) - 1
		for ; s >= 0; s-- {
			if overlapsAny(subs[s], f) {
				break
			}
		}
		s++
		if s == len(subs) {
			subs = append(subs, nil)
		}
		run := subs[s]
		i := sort.Search(len(run), func(i int) bool {
			return bytes.Compare(run[i].Smallest.UserKey, f.Smallest.UserKey) > 0
		})
		run = append(run, nil)
		copy(run[i+1:], run[i:])
		run[i] = f
		subs[s] = run
	}
	return subs
}

// overlapsAny reports whether f meets a table of run, a sorted sublevel.
func overlapsAny(run []*FileMetadata, f *FileMetadata) bool {
	i := sort.Search(len(run), func(i int) bool {
		return bytes.Compare(run[i].Largest.UserKey, f.Smallest.UserKey) >= 0
	})
	return i < len(run) && run[i].Overlaps(f.Smallest.UserKey, f.Largest.UserKey)
}

// Find returns the table of a sorted, disjoint run that may hold key, or nil.
func Find(run []*FileMetadata, key []byte) *FileMetadata {
	i := sort.Search(len(run), func(i int) bool {
		return bytes.Compare(run[i].Largest.UserKey, key) >= 0
	})
	if i < len(run) && run[i].Overlaps(key, key) {
		return run[i]
	}
	return nil
}

// L0Depth is the number of L0 sublevels: how many tables a read of one key
// may have to look at in L0, and what L0 compaction and write stalls count.
func (v *Version) L0Depth() int { return len(v.L0Sublevels) }
