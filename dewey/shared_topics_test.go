package dewey

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand"
	"strings"
	"sync"
	"testing"
)

// sharedMem is a shared topic store in memory: the first write of an id
// decides its path, as a KV bucket's create does.
type sharedMem struct {
	mu    sync.Mutex
	byID  map[string]string // encoded id -> path
	ids   map[string]ID
	saves int
}

func newSharedMem() *sharedMem { return &sharedMem{byID: map[string]string{}, ids: map[string]ID{}} }

func (m *sharedMem) LoadTopics(fn func(string, ID) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, p := range m.byID {
		if err := fn(p, m.ids[k]); err != nil {
			return err
		}
	}
	return nil
}

func (m *sharedMem) SaveTopic(p string, id ID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.saves++
	k := string(id.Encode())
	if have, ok := m.byID[k]; ok {
		if have != p {
			return ErrTopicTaken
		}
		return nil
	}
	m.byID[k], m.ids[k] = p, id
	return nil
}

func (m *sharedMem) LookupTopic(id ID) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.byID[string(id.Encode())]
	return p, ok, nil
}

// TestSharedTopicsAgree: four registries over one shared store resolve
// random paths concurrently, some of whose numbers another path took
// first; every registry gets the same id for a path, no two paths share
// one, a subtopic's id extends its parent's, and each learns by Path the
// ids the others assigned.
func TestSharedTopicsAgree(t *testing.T) {
	store := newSharedMem()
	// Decoys hold the first numbers two names hash to.
	for _, name := range []string{"sports", "weather"} {
		h := fnv.New32a()
		h.Write([]byte(name))
		n := 1 + h.Sum32()%(1<<30)
		for k := range uint32(3) {
			if err := store.SaveTopic(fmt.Sprintf("decoy-%s-%d", name, k), ID{n + k}); err != nil {
				t.Fatal(err)
			}
		}
	}
	regs := make([]*Topics, 4)
	for i := range regs {
		var err error
		if regs[i], err = NewSharedTopics(store, 4); err != nil {
			t.Fatal(err)
		}
	}
	names := []string{"sports", "weather", "traffic", "a", "b"}
	var paths []string
	rng := rand.New(rand.NewSource(7))
	for range 60 {
		segs := make([]string, 1+rng.Intn(3))
		for j := range segs {
			segs[j] = names[rng.Intn(len(names))]
		}
		paths = append(paths, strings.Join(segs, "/"))
	}
	got := make([]map[string]ID, len(regs))
	var wg sync.WaitGroup
	for i, r := range regs {
		got[i] = map[string]ID{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range paths {
				p := paths[(k*(i+1))%len(paths)]
				id, err := r.Resolve(p)
				if err != nil {
					t.Error(err)
					return
				}
				got[i][p] = id
			}
		}()
	}
	wg.Wait()
	owner := map[string]string{}
	for p, id := range got[0] {
		for i := range regs {
			if other, ok := got[i][p]; ok && !other.Equal(id) {
				t.Fatalf("%q: registry 0 has %v, registry %d has %v", p, id, i, other)
			}
		}
		k := string(id.Encode())
		if q, ok := owner[k]; ok && q != p {
			t.Fatalf("%q and %q share %v", p, q, id)
		}
		owner[k] = p
		if strings.HasPrefix(p, "decoy") || len(id) != strings.Count(p, "/")+1 {
			t.Fatalf("%q got %v", p, id)
		}
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			if parent := got[0][p[:i]]; parent != nil && !id[:len(id)-1].Equal(parent) {
				t.Fatalf("%q is %v under %v", p, id, parent)
			}
		}
		if path, ok := store.byID[k]; !ok || path != p {
			t.Fatalf("%q: the store says %q", p, path)
		}
	}
	// A fresh registry learns another's topic by its id alone.
	fresh, err := NewSharedTopics(newSharedMem(), 4)
	if err != nil {
		t.Fatal(err)
	}
	fresh.shared = store
	if p, ok := fresh.Path(got[0]["sports"]); !ok || p != "sports" {
		t.Fatalf("path of sports' id: %q %v", p, ok)
	}
	if _, ok := fresh.Path(ID{12345, 6}); ok {
		t.Fatal("an id nobody assigned has a path")
	}
}

// TestSharedTopicsFailure: a store failing for another reason fails the
// resolution and assigns nothing.
func TestSharedTopicsFailure(t *testing.T) {
	r, err := NewSharedTopics(failingShared{newSharedMem()}, 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Resolve("sports"); err == nil || errors.Is(err, ErrTopicTaken) {
		t.Fatalf("resolve on a failing store: %v", err)
	}
	if r.Len() != 0 {
		t.Fatalf("%d topics known after a failure", r.Len())
	}
}

type failingShared struct{ *sharedMem }

func (failingShared) SaveTopic(string, ID) error { return errors.New("no quorum") }
