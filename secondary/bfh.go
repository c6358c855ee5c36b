package secondary

import (
	"cmp"
	"slices"
	"sync"

	"github.com/seed84792017/cellcast/lsm"
)

// The Bloom filter hierarchy (Macyna and Ordonez) finds the tables that
// may hold a value without a dedicated index: each table of the primary
// table carries a bloom filter of the attribute's values (same size in
// every table), and the filters are arranged in a tree of order d whose
// inner nodes are the OR of their children. A lookup walks down only the
// subtrees whose filter admits the value, so it probes far fewer filters
// than a flat check of every table's. The tables it rules out are
// skipped; the others are read as the Embedded index reads them.

const (
	hierarchyBits  = 1 << 16 // per table filter, bits: the root ORs every table's values
	hierarchyOrder = 4       // children per node
)

// hierarchy is the tree over one attribute's table filters.
type hierarchy struct {
	tables []uint64   // file numbers the tree was built from, sorted
	nonces []uint64   // the leaves' tables
	levels [][][]byte // levels[0]: the leaves' bits; each higher level ORs hierarchyOrder nodes
}

// bfhState caches an attribute's tree until the set of tables changes.
type bfhState struct {
	mu     sync.Mutex
	tree   *hierarchy
	probes uint64 // filters probed by lookups
	flat   uint64 // filters a flat scan would have probed
}

// tree returns attr's hierarchy over the primary's current tables,
// rebuilt only when flushes or compactions changed them.
func (t *Table) tree(ix *index) (*hierarchy, error) {
	nums, err := t.primary.TableNums()
	if err != nil {
		return nil, err
	}
	st := ix.bfh
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.tree != nil && slices.Equal(st.tree.tables, nums) {
		return st.tree, nil
	}
	infos, err := t.primary.Tables()
	if err != nil {
		return nil, err
	}
	// The tables may have changed again between the calls: name the tree
	// by the set it was built from.
	nums = nums[:0]
	for _, ti := range infos {
		nums = append(nums, ti.FileNum)
	}
	slices.Sort(nums)
	h := &hierarchy{tables: nums}
	// Oldest first, so neighbours in the tree are tables of one age.
	slices.SortFunc(infos, func(a, b lsm.TableInfo) int { return cmp.Compare(a.FileNum, b.FileNum) })
	var leaves [][]byte
	for _, ti := range infos {
		s, ok := parseSummary(ti.Props.User[collectorName(ix.Name)])
		if !ok || s.kind != tableSummary || s.nbits != hierarchyBits {
			continue // no value of attr in it, or not readable: the scan's filter decides
		}
		h.nonces = append(h.nonces, s.nonce)
		leaves = append(leaves, s.bits)
	}
	h.levels = append(h.levels, leaves)
	for lvl := leaves; len(lvl) > 1; {
		var up [][]byte
		for i := 0; i < len(lvl); i += hierarchyOrder {
			or := slices.Clone(lvl[i])
			for _, c := range lvl[i+1 : min(i+hierarchyOrder, len(lvl))] {
				for j := range or {
					or[j] |= c[j]
				}
			}
			up = append(up, or)
		}
		h.levels = append(h.levels, up)
		lvl = up
	}
	st.tree = h
	return h, nil
}

// rule walks the tree for a value's hash and returns, for each leaf's
// table, whether to skip it (true) or read it (false), and the number of
// filters probed.
func (h *hierarchy) rule(hv uint64) (map[uint64]bool, uint64) {
	skip := map[uint64]bool{}
	if len(h.nonces) == 0 {
		return skip, 0
	}
	var probes uint64
	var walk func(level, i int)
	walk = func(level, i int) {
		probes++
		if !bloomHas(h.levels[level][i], hierarchyBits, hv) {
			// Every leaf under this node is out.
			lo, hi := i, i+1
			for l := level; l > 0; l-- {
				lo, hi = lo*hierarchyOrder, hi*hierarchyOrder
			}
			for _, n := range h.nonces[lo:min(hi, len(h.nonces))] {
				skip[n] = true
			}
			return
		}
		if level == 0 {
			skip[h.nonces[i]] = false
			return
		}
		for c := i * hierarchyOrder; c < min((i+1)*hierarchyOrder, len(h.levels[level-1])); c++ {
			walk(level-1, c)
		}
	}
	top := len(h.levels) - 1
	for i := range h.levels[top] {
		walk(top, i)
	}
	return skip, probes
}

// hierarchyLookup finds the rows with attr = v.
func (t *Table) hierarchyLookup(ix *index, v Value, k int) ([]Row, error) {
	h, err := t.tree(ix)
	if err != nil {
		return nil, err
	}
	skip, probes := h.rule(hash(v.appendKey(nil)))
	ix.bfh.mu.Lock()
	ix.bfh.probes += probes
	ix.bfh.flat += uint64(len(h.nonces))
	ix.bfh.mu.Unlock()
	return t.embeddedScan(ix.Name, v, v, k, skip)
}
