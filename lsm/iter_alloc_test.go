package lsm

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/seed84792017/cellcast/lsm/vfs"
)

// TestIteratorsReuseTheirParts opens, moves and closes many iterators at
// once over a DB that keeps changing shape (memtables, L0, levels), so that
// each reuses parts another closed: every iterator still reads exactly the
// state it was opened on (a map copied at that moment), and a closed one
// neither moves nor disturbs the others.
func TestIteratorsReuseTheirParts(t *testing.T) {
	db := mustOpen(t, "/db", smallOptions(vfs.NewMem()))
	defer db.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	model := map[string]string{}
	type open struct {
		it   *Iterator
		want []string // keys then values, in order
		pos  int
	}
	var live []*open
	snapshot := func() []string {
		keys := make([]string, 0, len(model))
		for k := range model {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var out []string
		for _, k := range keys {
			out = append(out, k, model[k])
		}
		return out
	}
	for op := range 20000 {
		switch r := rng.IntN(20); {
		case r < 12:
			k, v := fmt.Sprintf("k%04d", rng.IntN(2000)), fmt.Sprintf("v%d", op)
			if rng.IntN(8) == 0 {
				if err := db.Delete([]byte(k), NoSync); err != nil {
					t.Fatal(err)
				}
				delete(model, k)
			} else {
				if err := db.Set([]byte(k), []byte(v), NoSync); err != nil {
					t.Fatal(err)
				}
				model[k] = v
			}
		case r < 14 && len(live) < 6:
			it, err := db.NewIter(nil)
			if err != nil {
				t.Fatal(err)
			}
			o := &open{it: it, want: snapshot()}
			if !it.First() {
				if len(o.want) != 0 {
					t.Fatalf("op %d: an empty iterator, want %d keys", op, len(o.want)/2)
				}
			}
			live = append(live, o)
		case r < 18 && len(live) > 0:
			o := live[rng.IntN(len(live))]
			for range rng.IntN(50) {
				if !o.it.Valid() {
					break
				}
				if o.pos >= len(o.want) || !bytes.Equal(o.it.Key(), []byte(o.want[o.pos])) || !bytes.Equal(o.it.Value(), []byte(o.want[o.pos+1])) {
					t.Fatalf("op %d: at %q=%q, want entry %d of %d", op, o.it.Key(), o.it.Value(), o.pos/2, len(o.want)/2)
				}
				o.pos += 2
				o.it.Next()
			}
			if !o.it.Valid() && (o.it.Error() != nil || o.pos != len(o.want)) {
				t.Fatalf("op %d: ended after %d of %d entries: %v", op, o.pos/2, len(o.want)/2, o.it.Error())
			}
		case r < 19 && len(live) > 0:
			i := rng.IntN(len(live))
			it := live[i].it
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
			if it.Close() != nil || it.Next() || it.Valid() {
				t.Fatalf("op %d: a closed iterator moved", op)
			}
			live = slices.Delete(live, i, i+1)
		default:
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, o := range live {
		o.it.Close()
	}
}
