package loadgen

import (
	"fmt"
	"testing"
)

// TestPagesJoinAPagedReply: a reply with more set waits for its page
// frames; the last one gives the reply back with every result in order,
// while replies of other requests go through untouched.
func TestPagesJoinAPagedReply(t *testing.T) {
	res := func(pids ...string) []struct {
		Pid string `json:"pid"`
	} {
		out := make([]struct {
			Pid string `json:"pid"`
		}, len(pids))
		for i, p := range pids {
			out[i].Pid = p
		}
		return out
	}
	var p pages
	if _, whole := p.add(&reply{ID: "1", Op: "subscribed", More: true, Results: res("a", "b")}); whole {
		t.Fatal("a first page came back whole")
	}
	if r, whole := p.add(&reply{ID: "2", Op: "published"}); !whole || r.ID != "2" {
		t.Fatal("an unpaged reply was held")
	}
	if _, whole := p.add(&reply{ID: "1", Op: "page", More: true, Results: res("c")}); whole {
		t.Fatal("a middle page ended the reply")
	}
	r, whole := p.add(&reply{ID: "1", Op: "page", Results: res("d", "e")})
	if !whole || r.Op != "subscribed" || fmt.Sprint(r.Results) != "[{a} {b} {c} {d} {e}]" {
		t.Fatalf("joined %v %v", r, whole)
	}
	if r, whole := p.add(&reply{ID: "1", Op: "page"}); !whole || r.Op != "page" {
		t.Fatal("a page after the last was not handed back as unexpected")
	}
}
