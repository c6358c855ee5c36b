package dewey

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

type memTopics struct {
	mu    sync.Mutex
	saved map[string]ID
	fail  bool
}

func (m *memTopics) LoadTopics(fn func(string, ID) error) error {
	for p, id := range m.saved {
		if err := fn(p, id); err != nil {
			return err
		}
	}
	return nil
}

func (m *memTopics) SaveTopic(p string, id ID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail {
		return errors.New("disk full")
	}
	m.saved[p] = id
	return nil
}

func TestTopicsAssignAndPersist(t *testing.T) {
	store := &memTopics{saved: map[string]ID{}}
	tp, err := NewTopics(store, 8)
	if err != nil {
		t.Fatal(err)
	}
	soccer, err := tp.Resolve("sports/soccer")
	if err != nil {
		t.Fatal(err)
	}
	sports, _ := tp.Lookup("sports")
	tennis, _ := tp.Resolve("sports/tennis")
	weather, _ := tp.Resolve("weather")
	if sports.String() != "1" || soccer.String() != "1.1" || tennis.String() != "1.2" || weather.String() != "2" {
		t.Fatalf("sports %v soccer %v tennis %v weather %v", sports, soccer, tennis, weather)
	}
	if again, _ := tp.Resolve("sports/soccer"); !again.Equal(soccer) {
		t.Fatal("second Resolve changed the id")
	}
	if p, ok := tp.Path(tennis); !ok || p != "sports/tennis" {
		t.Fatalf("Path = %q", p)
	}
	// Reload: same ids, and new ones continue after the old.
	tp2, err := NewTopics(store, 8)
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := tp2.Lookup("sports/soccer"); !id.Equal(soccer) {
		t.Fatalf("after reload soccer = %v", id)
	}
	if golf, _ := tp2.Resolve("sports/golf"); golf.String() != "1.3" {
		t.Fatalf("golf = %v", golf)
	}
	// A failed save assigns nothing.
	store.fail = true
	if _, err := tp2.Resolve("news"); err == nil {
		t.Fatal("Resolve succeeded without storing")
	}
	store.fail = false
	if id, _ := tp2.Resolve("news"); id.String() != "3" {
		t.Fatalf("news = %v after a failed attempt", id)
	}
}

func TestTopicsBadPaths(t *testing.T) {
	tp, _ := NewTopics(&memTopics{saved: map[string]ID{}}, 3)
	for _, p := range []string{"", "/a", "a/", "a//b", "A", "a b", "a.b", "a/b/c/d", "é"} {
		if _, err := tp.Resolve(p); !errors.Is(err, ErrBadTopic) {
			t.Fatalf("Resolve(%q): %v", p, err)
		}
	}
}

func TestTopicsConcurrent(t *testing.T) {
	tp, _ := NewTopics(&memTopics{saved: map[string]ID{}}, 8)
	var wg sync.WaitGroup
	ids := make([][]string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				id, err := tp.Resolve(fmt.Sprintf("t%d/s%d", i%10, i%7))
				if err != nil {
					t.Error(err)
					return
				}
				ids[g] = append(ids[g], id.String())
			}
		}(g)
	}
	wg.Wait()
	for g := 1; g < 8; g++ {
		if fmt.Sprint(ids[g]) != fmt.Sprint(ids[0]) {
			t.Fatal("goroutines saw different ids for the same paths")
		}
	}
}
