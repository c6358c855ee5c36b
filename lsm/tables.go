package lsm

import (
	"slices"

	"github.com/seed84792017/cellcast/lsm/internal/base"
	"github.com/seed84792017/cellcast/lsm/sstable"
)

// TableInfo describes one live table.
type TableInfo struct {
	Level     int
	FileNum   uint64
	Size      uint64
	Smallest  []byte
	Largest   []byte
	Props     sstable.Properties
	NumBlocks int
}

// Tables lists the live tables, L0 newest first then L1 … L6 in key order,
// with their properties (including collectors' per-table summaries).
func (d *DB) Tables() ([]TableInfo, error) {
	rs := d.loadReadState()
	if rs == nil {
		return nil, ErrClosed
	}
	defer rs.unref()
	var out []TableInfo
	for lvl, files := range rs.version.Levels {
		for i := range files {
			f := files[i]
			if lvl == 0 {
				f = files[len(files)-1-i]
			}
			r, ref, err := d.tables.get(f)
			if err != nil {
				return nil, err
			}
			out = append(out, TableInfo{
				Level: lvl, FileNum: f.Num, Size: f.Size,
				Smallest: append([]byte(nil), f.Smallest.UserKey...), Largest: append([]byte(nil), f.Largest.UserKey...),
				Props: *r.Properties(), NumBlocks: r.NumBlocks(),
			})
			ref.release()
		}
	}
	return out, nil
}

// TableNums returns the file numbers of the live tables, sorted: a cheap
// way to learn whether the set of tables changed since a Tables call (it
// opens no table).
func (d *DB) TableNums() ([]uint64, error) {
	rs := d.loadReadState()
	if rs == nil {
		return nil, ErrClosed
	}
	defer rs.unref()
	var out []uint64
	for _, files := range rs.version.Levels {
		for _, f := range files {
			out = append(out, f.Num)
		}
	}
	slices.Sort(out)
	return out, nil
}

// InternalKey is exposed to block property collectors.
type InternalKey = base.InternalKey
