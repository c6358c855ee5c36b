package sstable

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"

	"github.com/seed84792017/cellcast/lsm/internal/base"
)

// Properties describe a table. They are written once, in the properties block.
type Properties struct {
	NumEntries uint64
	// NumKeys counts distinct user keys; 0 in tables written before it
	// was recorded.
	NumKeys       uint64
	NumDeletions  uint64
	NumMerges     uint64
	NumDataBlocks uint64
	RawKeySize    uint64
	RawValueSize  uint64
	DataSize      uint64
	IndexSize     uint64
	FilterSize    uint64
	SmallestSeq   uint64
	LargestSeq    uint64
	// Collectors are the block property collectors' names, in the order
	// their per-block summaries appear in index entries.
	Collectors []string
	// User holds each collector's per-table summary, by collector name.
	User map[string][]byte
}

const userPrefix = "user."

func (p *Properties) fields() map[string]*uint64 {
	return map[string]*uint64{
		"cellcast.num.entries":     &p.NumEntries,
		"cellcast.num.keys":        &p.NumKeys,
		"cellcast.num.deletions":   &p.NumDeletions,
		"cellcast.num.merges":      &p.NumMerges,
		"cellcast.num.data.blocks": &p.NumDataBlocks,
		"cellcast.raw.key.size":    &p.RawKeySize,
		"cellcast.raw.value.size":  &p.RawValueSize,
		"cellcast.data.size":       &p.DataSize,
		"cellcast.index.size":      &p.IndexSize,
		"cellcast.filter.size":     &p.FilterSize,
		"cellcast.smallest.seq":    &p.SmallestSeq,
		"cellcast.largest.seq":     &p.LargestSeq,
	}
}

func (p *Properties) encode() []byte {
	kv := map[string][]byte{}
	for k, v := range p.fields() {
		kv[k] = binary.AppendUvarint(nil, *v)
	}
	kv["cellcast.collectors"] = []byte(strings.Join(p.Collectors, "\x00"))
	for name, v := range p.User {
		kv[userPrefix+name] = v
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var w blockWriter
	for _, k := range keys {
		w.add([]byte(k), kv[k])
	}
	return w.finish()
}

func decodeProperties(raw []byte, file string, off int64) (Properties, error) {
	var p Properties
	var it blockIter
	if err := it.init(raw, file, off); err != nil {
		return p, err
	}
	fields := p.fields()
	for it.first(); it.valid; it.nextEntry() {
		k := string(it.key)
		switch {
		case k == "cellcast.collectors":
			if len(it.val) > 0 {
				p.Collectors = strings.Split(string(it.val), "\x00")
			}
		case strings.HasPrefix(k, userPrefix):
			if p.User == nil {
				p.User = map[string][]byte{}
			}
			p.User[k[len(userPrefix):]] = append([]byte(nil), it.val...)
		default:
			if f, ok := fields[k]; ok {
				v, n := binary.Uvarint(it.val)
				if n <= 0 {
					return p, base.Corruptf(file, off, "properties: bad value for %s", k)
				}
				*f = v
			}
		}
	}
	return p, it.err
}

func (p Properties) String() string {
	return fmt.Sprintf("entries=%d dels=%d merges=%d blocks=%d seq=[%d,%d]",
		p.NumEntries, p.NumDeletions, p.NumMerges, p.NumDataBlocks, p.SmallestSeq, p.LargestSeq)
}
