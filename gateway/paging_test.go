package gateway

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// pageCost is what a page of the given item sizes costs, as the splitter
// counts it: its envelope, the items and the commas between them.
func pageCost(envelope int, sizes []int) int {
	c := envelope
	for i, s := range sizes {
		c += s
		if i > 0 {
			c++
		}
	}
	return c
}

// TestSplitPagesAgainstOracle checks random item sizes against what a
// split must be: the pages cover the items in order, none is empty
// (unless there are no items), each fits the budget or holds one item,
// and each is as full as it can be (the next item would not fit), which
// makes the split unique.
func TestSplitPagesAgainstOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 84792017))
	for trial := range 5000 {
		n := rng.IntN(60)
		sizes := make([]int, n)
		maxSize := 1 + rng.IntN(500)
		for i := range sizes {
			sizes[i] = rng.IntN(maxSize)
		}
		first, rest := rng.IntN(100), rng.IntN(100)
		budget := rng.IntN(2000)
		ends := splitPages(sizes, first, rest, budget)
		if len(ends) == 0 || ends[len(ends)-1] != n {
			t.Fatalf("trial %d: ends %v do not cover %d items", trial, ends, n)
		}
		from := 0
		for p, end := range ends {
			env := rest
			if p == 0 {
				env = first
			}
			page := sizes[from:end]
			switch {
			case len(page) == 0 && n > 0:
				t.Fatalf("trial %d: page %d empty: ends %v", trial, p, ends)
			case len(page) > 1 && pageCost(env, page) > budget:
				t.Fatalf("trial %d: page %d costs %d > budget %d", trial, p, pageCost(env, page), budget)
			case end < n && pageCost(env, sizes[from:end+1]) <= budget:
				t.Fatalf("trial %d: page %d could take item %d: ends %v sizes %v budget %d", trial, p, end, ends, sizes, budget)
			}
			from = end
		}
		if n == 0 && !slices.Equal(ends, []int{0}) {
			t.Fatalf("no items: ends %v, want one empty page", ends)
		}
	}
}

// TestSplitPagesOversizeItem: an item larger than the budget gets a page
// of its own rather than being dropped or stopping the split.
func TestSplitPagesOversizeItem(t *testing.T) {
	got := splitPages([]int{10, 500, 10, 10}, 5, 5, 40)
	if want := []int{1, 2, 4}; !slices.Equal(got, want) {
		t.Fatalf("ends %v, want %v", got, want)
	}
}

// TestWithPagingAndArrayAreJSON: the spliced replies parse, with the
// fields the protocol names.
func TestWithPagingAndArrayAreJSON(t *testing.T) {
	head := encode(subscribedReply{ID: json.RawMessage(`"7"`), Op: "subscribed", Sid: "s"})
	b := withArray(withPaging(head, 3, "abc.2"), "results", [][]byte{[]byte(`{"pid":"a"}`), []byte(`{"pid":"b"}`)})
	var m struct {
		ID      string           `json:"id"`
		More    bool             `json:"more"`
		Pages   int              `json:"pages"`
		Next    string           `json:"next"`
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if m.ID != "7" || !m.More || m.Pages != 3 || m.Next != "abc.2" || len(m.Results) != 2 || m.Results[1]["pid"] != "b" {
		t.Fatalf("%s", b)
	}
	if b := withArray(head, "recent", nil); !json.Valid(b) {
		t.Fatalf("empty array: %s", b)
	}
}

func codeIs(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// TestCursorStore: pages come in order, a retry gets the same page, the
// pages before are released, the last page ends the cursor; another
// user's cursor is forbidden; expired, unknown and malformed cursors get
// clear errors; the bounds evict the entries closest to expiry.
func TestCursorStore(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newCursorStore(func() time.Time { return now })
	pages := [][]byte{[]byte(`[2]`), []byte(`[3]`), []byte(`[4]`)}
	cur := c.put("alice", json.RawMessage(`"q"`), "results", slices.Clone(pages))
	if _, err := c.take(cur, "bob"); !codeIs(err, CodeForbidden) {
		t.Fatalf("bob took alice's cursor: %v", err)
	}
	var got []string
	for cur != "" {
		p, err := c.take(cur, "alice")
		if err != nil {
			t.Fatal(err)
		}
		again, err := c.take(cur, "alice") // a retry of a lost response
		if err != nil || string(again.results) != string(p.results) {
			t.Fatalf("retry of %s: %v %v", cur, again, err)
		}
		if p.of != "results" || string(p.id) != `"q"` || p.page != len(got)+2 {
			t.Fatalf("page %+v", p)
		}
		got = append(got, string(p.results))
		if len(got) == 2 && c.bytes != len(pages[1])+len(pages[2]) {
			t.Fatalf("page 2 not released: %d bytes held", c.bytes)
		}
		if len(got) < 3 && p.next == "" {
			t.Fatalf("no next after page %d", p.page)
		}
		cur = p.next
	}
	if !slices.Equal(got, []string{"[2]", "[3]", "[4]"}) {
		t.Fatalf("pages %v", got)
	}
	if len(c.entries) != 1 || c.bytes != len(pages[2]) {
		t.Fatalf("the finished cursor holds %d entries, %d bytes: want its last page only", len(c.entries), c.bytes)
	}
	now = now.Add(CursorTTL)
	c.sweep()
	if len(c.entries) != 0 || c.bytes != 0 || len(c.users) != 0 {
		t.Fatalf("the expired cursor is still held: %d entries, %d bytes", len(c.entries), c.bytes)
	}

	cur = c.put("alice", nil, "subscribed", slices.Clone(pages))
	now = now.Add(CursorTTL)
	if _, err := c.take(cur, "alice"); !codeIs(err, CodeNotFound) {
		t.Fatalf("expired cursor: %v", err)
	}
	for _, bad := range []string{"", "x", "0123.2", "0123456789abcdef0123456789abcdef.1", "0123456789abcdef0123456789abcdef.z"} {
		if _, err := c.take(bad, "alice"); !codeIs(err, CodeBadRequest) {
			t.Fatalf("cursor %q: %v", bad, err)
		}
	}
	if _, err := c.take("0123456789abcdef0123456789abcdef.2", "alice"); !codeIs(err, CodeNotFound) {
		t.Fatalf("unknown cursor: %v", err)
	}

	// Per user: alice's oldest goes, bob's stay.
	bobs := c.put("bob", nil, "results", [][]byte{[]byte(`[1]`)})
	var first string
	for i := range cursorPerUser + 1 {
		now = now.Add(time.Millisecond)
		k := c.put("alice", nil, "results", [][]byte{[]byte(`[1]`)})
		if i == 0 {
			first = k
		}
	}
	if c.users["alice"] != cursorPerUser {
		t.Fatalf("alice holds %d cursors", c.users["alice"])
	}
	if _, err := c.take(first, "alice"); !codeIs(err, CodeNotFound) {
		t.Fatalf("alice's oldest cursor survived: %v", err)
	}
	if _, err := c.take(bobs, "bob"); err != nil {
		t.Fatalf("bob's cursor evicted by alice's: %v", err)
	}
	// Bytes: one entry over the bound evicts the rest and stays.
	big := c.put("carol", nil, "results", [][]byte{make([]byte, cursorMaxBytes+1)})
	if len(c.entries) != 1 || c.bytes != cursorMaxBytes+1 {
		t.Fatalf("%d entries, %d bytes", len(c.entries), c.bytes)
	}
	if _, err := c.take(big, "carol"); err != nil {
		t.Fatal(err)
	}
}
