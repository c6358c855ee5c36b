package lsm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/seed84792017/cellcast/lsm/vfs"
)

// fragmentsOf is key k's list after n merges by its writer: "<n>…<1>".
func fragmentsOf(n int) []byte {
	var b []byte
	for i := n; i >= 1; i-- {
		b = append(b, fmt.Sprintf("<%d>", i)...)
	}
	return b
}

// Writers append to their own keys while readers, iterators, visits, a
// snapshot holder and manual compactions run; every read must see a whole
// prefix of each key's history, never a torn or reordered list.
func TestConcurrentReadersWritersCompactions(t *testing.T) {
	db := mustOpen(t, "/db", smallOptions(vfs.NewMem()))
	defer db.Close()
	const writers, keysPer = 4, 50
	rounds := opsScale(150, 10)
	var wg sync.WaitGroup
	done := make(chan struct{})
	errc := make(chan error, 16)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for r := 1; r <= rounds; r++ {
				b := NewBatch()
				for k := 0; k < keysPer; k++ {
					b.Merge([]byte(fmt.Sprintf("w%d-k%02d", w, k)), []byte(fmt.Sprintf("<%d>", r)))
				}
				if err := db.Apply(b, &WriteOptions{Sync: r%50 == 0}); err != nil {
					errc <- err
					return
				}
			}
		}(w)
	}
	valid := func(key, v []byte) error {
		// A list is "<n>…<1>" for some n.
		if len(v) == 0 {
			return nil
		}
		var n int
		fmt.Sscanf(string(v), "<%d>", &n)
		if !bytes.Equal(v, fragmentsOf(n)) {
			return fmt.Errorf("key %s has torn list %q", key, v)
		}
		return nil
	}
	var rg sync.WaitGroup
	reader := func(fn func() error) {
		rg.Add(1)
		go func() {
			defer rg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if err := fn(); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	reader(func() error {
		for w := 0; w < writers; w++ {
			k := []byte(fmt.Sprintf("w%d-k%02d", w, w*7%keysPer))
			v, err := db.Get(k)
			if err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
			if err := valid(k, v); err != nil {
				return err
			}
		}
		return nil
	})
	reader(func() error {
		it, err := db.NewIter(nil)
		if err != nil {
			return err
		}
		defer it.Close()
		// Each round is one batch over all of a writer's keys, so a
		// consistent view shows every key of a writer at the same round.
		rounds := map[byte]int{}
		for ok := it.First(); ok; ok = it.Next() {
			if err := valid(it.Key(), it.Value()); err != nil {
				return err
			}
			var n int
			fmt.Sscanf(string(it.Value()), "<%d>", &n)
			w := it.Key()[1]
			if r, seen := rounds[w]; seen && r != n {
				return fmt.Errorf("iterator saw writer %c at rounds %d and %d", w, r, n)
			}
			rounds[w] = n
		}
		return it.Error()
	})
	reader(func() error {
		k := []byte("w1-k03")
		var cat []byte
		err := db.VisitKey(k, nil, func(f *Fragment) VisitDecision { cat = append(cat, f.Value...); return VisitContinue })
		if err != nil {
			return err
		}
		return valid(k, cat)
	})
	reader(func() error {
		s := db.NewSnapshot()
		defer s.Close()
		k := []byte("w2-k10")
		a, err1 := s.Get(k)
		b, err2 := s.Get(k)
		if !bytes.Equal(a, b) || !errors.Is(err1, err2) {
			return fmt.Errorf("snapshot reads differ: %q vs %q", a, b)
		}
		return nil
	})
	reader(func() error { return db.Compact(context.Background(), []byte("w1"), []byte("w3")) })
	wg.Wait()
	close(done)
	rg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	for w := 0; w < writers; w++ {
		for k := 0; k < keysPer; k++ {
			v, err := db.Get([]byte(fmt.Sprintf("w%d-k%02d", w, k)))
			if err != nil || !bytes.Equal(v, fragmentsOf(rounds)) {
				t.Fatalf("final w%d-k%02d: %v, %d bytes", w, k, err, len(v))
			}
		}
	}
}
