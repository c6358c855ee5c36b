package owed

// index finds the records in cells overlapping a cell: those at the cell
// itself or an ancestor (at), and those below it (under, filed at every
// proper ancestor of their cell).
type index struct {
	at, under map[string][]int32
}

func newIndex() *index { return &index{at: map[string][]int32{}, under: map[string][]int32{}} }

func (x *index) add(cell string, i int32) {
	x.at[cell] = append(x.at[cell], i)
	ancestors(cell, func(a string) { x.under[a] = append(x.under[a], i) })
}

// overlapping calls keep for every record in a cell overlapping cell, each
// once; a record it returns false for is dropped from the lists it was
// met in (its time has passed for every later caller).
func (x *index) overlapping(cell string, keep func(int32) bool) {
	scan := func(m map[string][]int32, k string) {
		l, ok := m[k]
		if !ok {
			return
		}
		out := l[:0]
		for _, i := range l {
			if keep(i) {
				out = append(out, i)
			}
		}
		if len(out) == 0 {
			delete(m, k)
		} else {
			m[k] = out
		}
	}
	scan(x.at, cell)
	scan(x.under, cell)
	ancestors(cell, func(a string) { scan(x.at, a) })
}
