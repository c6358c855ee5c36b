package cluster

import (
	"testing"
)

// A caller that gives up before its reply is handled leaves no route
// behind, whatever order the two come in: the reply's route is made only
// if the caller still waits, and a caller that gave up after it was made
// abandons it.
func TestCallGivenUpMakesNoRoute(t *testing.T) {
	nodes := startNodes(t, natsCluster(t, 3), 2)
	h := nodes[0].h
	makeRoute := func(id uint64) func(*reply) {
		return func(r *reply) {
			h.put(&route{id: id, sid: r.Sid, shard: "g1", sink: newSink(), state: opening})
		}
	}
	// The caller gives up first: the reply then makes nothing.
	c := &call{done: make(chan *reply, 1), onReply: makeRoute(101), shard: "g1"}
	h.mu.Lock()
	h.calls["a"] = c
	h.mu.Unlock()
	if h.giveUp("a", c) {
		t.Fatal("a call with no reply yet reported answered")
	}
	h.answer(c, &reply{Sid: "1-2.3"})
	h.mu.Lock()
	r := h.routes["1-2.3"]
	h.mu.Unlock()
	if r != nil {
		t.Fatal("a reply handled after its caller gave up made a route")
	}
	// The reply first: the caller that gives up then finds it answered,
	// and abandons the route it made.
	c = &call{done: make(chan *reply, 1), onReply: makeRoute(102), shard: "g1"}
	h.mu.Lock()
	h.calls["b"] = c
	h.mu.Unlock()
	h.answer(c, &reply{Sid: "1-2.4"})
	if !h.giveUp("b", c) {
		t.Fatal("a call whose reply was handled reported unanswered")
	}
	h.abandon(102)
	h.mu.Lock()
	r = h.routes["1-2.4"]
	h.mu.Unlock()
	if r != nil {
		t.Fatal("the route of a call given up after its reply stayed")
	}
}
