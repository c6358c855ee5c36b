package dewey

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
)

// ErrBadTopic is matched by errors about malformed topic paths.
var ErrBadTopic = errors.New("dewey: bad topic path")

// TopicStore persists topic assignments. The storage layer implements it;
// SaveTopic must be durable when it returns.
type TopicStore interface {
	LoadTopics(fn func(path string, id ID) error) error
	SaveTopic(path string, id ID) error
}

// SharedTopicStore is a TopicStore several processes assign topics in at
// once (a cluster's). SaveTopic returns ErrTopicTaken when id already names
// another path, and nil when it names this one; LookupTopic finds the path
// of an id another process assigned.
type SharedTopicStore interface {
	TopicStore
	LookupTopic(id ID) (path string, ok bool, err error)
}

// ErrTopicTaken: a shared store holds another path at the id.
var ErrTopicTaken = errors.New("dewey: topic id taken by another path")

// Topics maps topic paths ("sports/soccer") to Dewey ids, assigning the next
// free child number on first use: "sports" might become 3 and
// "sports/soccer" 3.1, so a topic's subtopics are its Dewey subtree. Topics
// form a namespace of their own, apart from geo cells; storage keeps them
// apart. Safe for concurrent use.
type Topics struct {
	mu       sync.Mutex
	store    TopicStore
	maxDepth int
	byPath   map[string]ID
	byID     map[string]string // encoded id -> path
	next     map[string]uint32 // parent path ("" for the top) -> next child number
	shared   SharedTopicStore  // NewSharedTopics: child numbers hashed, not counted
}

// MaxTopicSegment is the longest segment of a topic path.
const MaxTopicSegment = 64

// NewTopics loads the stored assignments.
func NewTopics(store TopicStore, maxDepth int) (*Topics, error) {
	if maxDepth < 1 || maxDepth > MaxDepth {
		return nil, fmt.Errorf("%w: %d", ErrBadDepth, maxDepth)
	}
	t := &Topics{store: store, maxDepth: maxDepth, byPath: map[string]ID{}, byID: map[string]string{}, next: map[string]uint32{}}
	err := store.LoadTopics(func(path string, id ID) error {
		if _, err := t.checkPath(path); err != nil {
			return err
		}
		if len(id) != strings.Count(path, "/")+1 {
			return fmt.Errorf("dewey: stored topic %q has id %v of the wrong depth", path, id)
		}
		t.remember(path, id)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dewey: loading topics: %w", err)
	}
	return t, nil
}

func (t *Topics) remember(path string, id ID) {
	t.byPath[path] = id
	t.byID[string(id.Encode())] = path
	parent := ""
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		parent = path[:i]
	}
	if last := id[len(id)-1]; last >= t.next[parent] {
		t.next[parent] = last + 1
	}
}

// checkPath validates a path: segments of 1…64 characters from a–z, 0–9,
// '_' and '-', joined by '/', at most maxDepth of them.
func (t *Topics) checkPath(path string) ([]string, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: empty", ErrBadTopic)
	}
	segs := strings.Split(path, "/")
	if len(segs) > t.maxDepth {
		return nil, fmt.Errorf("%w: %d levels, limit %d", ErrBadTopic, len(segs), t.maxDepth)
	}
	for _, s := range segs {
		if s == "" || len(s) > MaxTopicSegment {
			return nil, fmt.Errorf("%w: %q", ErrBadTopic, path)
		}
		for _, c := range s {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
				return nil, fmt.Errorf("%w: %q (use a-z, 0-9, '_', '-' and '/')", ErrBadTopic, path)
			}
		}
	}
	return segs, nil
}

// NewSharedTopics loads the assignments of a store that several processes
// assign topics in. A topic's child number is a hash of its name, probed
// onwards past numbers the store says are taken: every process tries the
// same numbers in the same order, and the store's first write decides, so
// all agree on every topic's id without asking one another.
func NewSharedTopics(store SharedTopicStore, maxDepth int) (*Topics, error) {
	t, err := NewTopics(store, maxDepth)
	if err != nil {
		return nil, err
	}
	t.shared = store
	return t, nil
}

// maxProbes bounds the numbers a shared registry tries for one name.
const maxProbes = 64

// claim assigns path (the child seg of parent) an id in a shared store.
func (t *Topics) claim(parent ID, seg, path string) (ID, error) {
	h := fnv.New32a()
	h.Write([]byte(seg))
	n := 1 + h.Sum32()%(1<<30)
	for range maxProbes {
		child := parent.Child(n)
		if other, ok := t.byID[string(child.Encode())]; !ok || other == path {
			err := t.shared.SaveTopic(path, child)
			if err == nil {
				return child, nil
			}
			if !errors.Is(err, ErrTopicTaken) {
				return nil, fmt.Errorf("dewey: storing topic %q: %w", path, err)
			}
		}
		n++
	}
	return nil, fmt.Errorf("%w: no free number for %q after %d tries", ErrOverflow, path, maxProbes)
}

// Lookup returns the id of a known topic.
func (t *Topics) Lookup(path string) (ID, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	id, ok := t.byPath[path]
	return id, ok
}

// Path returns the topic path of an id; in a shared registry, one another
// process assigned is looked up in the store.
func (t *Topics) Path(id ID) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.byID[string(id.Encode())]
	if ok || t.shared == nil || len(id) == 0 {
		return p, ok
	}
	p, ok, err := t.shared.LookupTopic(id)
	if err != nil || !ok {
		return "", false
	}
	if _, err := t.checkPath(p); err != nil || strings.Count(p, "/")+1 != len(id) {
		return "", false
	}
	t.remember(p, id)
	return p, true
}

// Resolve returns the id of path, assigning ids to it and to any missing
// ancestor topic first. An assignment is stored before it is returned.
func (t *Topics) Resolve(path string) (ID, error) {
	segs, err := t.checkPath(path)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if id, ok := t.byPath[path]; ok {
		return id, nil
	}
	var id ID
	for i := range segs {
		p := strings.Join(segs[:i+1], "/")
		if known, ok := t.byPath[p]; ok {
			id = known
			continue
		}
		if t.shared != nil {
			child, err := t.claim(id, segs[i], p)
			if err != nil {
				return nil, err
			}
			t.remember(p, child)
			id = child
			continue
		}
		parent := strings.Join(segs[:i], "/")
		n := t.next[parent]
		if n == 0 {
			n = 1
		}
		if n == 0xFFFFFFFF {
			return nil, fmt.Errorf("%w: no child numbers left under %q", ErrOverflow, parent)
		}
		child := id.Child(n)
		if err := t.store.SaveTopic(p, child); err != nil {
			return nil, fmt.Errorf("dewey: storing topic %q: %w", p, err)
		}
		t.remember(p, child)
		id = child
	}
	return id, nil
}

// Len is the number of topics known.
func (t *Topics) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byPath)
}

// Missing is how many topics Resolve(path) would create: path and its
// unknown ancestors. A bad path creates none (Resolve refuses it).
func (t *Topics) Missing(path string) int {
	segs, err := t.checkPath(path)
	if err != nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for i := range segs {
		if _, ok := t.byPath[strings.Join(segs[:i+1], "/")]; !ok {
			n++
		}
	}
	return n
}
