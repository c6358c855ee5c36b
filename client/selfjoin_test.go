package client_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/client"
)

// walker subscribes with self-join as one user moving between cells, and
// checks past results against what the earlier replies returned: the
// expectation is kept here, not taken from the broker's rule.
type walker struct {
	t     *testing.T
	u, p  *client.Client
	names map[string]string // pid → description
	mu    sync.Mutex
	// returned is what the user has been given so far, in past results
	// or notifications.
	returned map[string]bool
	notified chan string
}

func newWalker(t *testing.T) *walker {
	_, url := running(t)
	return &walker{t: t, u: dialT(t, url, "walker"), p: dialT(t, url, "reporter"), names: map[string]string{},
		returned: map[string]bool{}, notified: make(chan string, 100)}
}

// notice waits for a notification of the publication described desc.
func (w *walker) notice(desc string) {
	w.t.Helper()
	for {
		select {
		case pid := <-w.notified:
			if w.names[pid] == desc {
				return
			}
		case <-time.After(10 * time.Second):
			w.t.Fatalf("no notification of %q", desc)
		}
	}
}

func (w *walker) publish(cell, desc string) {
	w.t.Helper()
	r, err := w.p.Publish(ctxT(w.t), client.PublishRequest{Location: client.Cell(cell), Expires: time.Minute, Desc: desc})
	if err != nil {
		w.t.Fatal(err)
	}
	w.names[r.Pid] = desc
}

// visit subscribes at cell and returns the past results' descriptions,
// failing on any the user was given before.
func (w *walker) visit(cell string) string {
	w.t.Helper()
	s, err := w.u.Subscribe(ctxT(w.t), client.SubscribeRequest{Location: client.Cell(cell), Past: time.Minute, Future: time.Minute, SelfJoin: true,
		Handler: func(n client.Notification) {
			w.mu.Lock()
			w.returned[n.Publication.Pid] = true
			w.mu.Unlock()
			w.notified <- n.Publication.Pid
		}})
	if err != nil {
		w.t.Fatal(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var got []string
	for _, pub := range s.Past {
		if w.returned[pub.Pid] {
			w.t.Errorf("at %s: %q returned again", cell, w.names[pub.Pid])
		}
		w.returned[pub.Pid] = true
		got = append(got, w.names[pub.Pid])
	}
	slices.Sort(got)
	return fmt.Sprint(got)
}

// TestSelfJoinMovingUser: a user moving c1 → c2 → c1 → c2 inside the
// window (each subscription still live when the next begins) is given no
// publication twice, in past results or notifications, ancestors of its
// cells included, and does get what is new at each step.
func TestSelfJoinMovingUser(t *testing.T) {
	w := newWalker(t)
	w.publish("1.2.1", "in c1")
	w.publish("1.2", "parent of c1")
	w.publish("1.3.1", "in c2")
	if got := w.visit("1.2.1"); got != "[in c1 parent of c1]" {
		t.Fatalf("first visit to c1: %s", got)
	}
	w.publish("1.3", "parent of c2") // after the c1 subscription, outside it
	if got := w.visit("1.3.1"); got != "[in c2 parent of c2]" {
		t.Errorf("visit to c2: %s", got)
	}
	w.publish("1.2.1.4", "below c1") // notified to the live c1 subscription
	w.notice("below c1")
	if got := w.visit("1.2.1"); got != "[]" {
		t.Errorf("back in c1: %s, want nothing: all of it came before", got)
	}
	w.publish("1.3.1.2", "below c2")
	w.notice("below c2")
	if got := w.visit("1.3.1"); got != "[]" {
		t.Errorf("back in c2: %s, want nothing", got)
	}
}

// TestSelfJoinCommonAncestor: a publication at an ancestor of both c1 and
// c2, returned at c1, must not come again at c2, though c1 and c2 do not
// overlap: the store finds the user's earlier subscriptions in the user's
// own list (listdb/selfjoin.go).
func TestSelfJoinCommonAncestor(t *testing.T) {
	w := newWalker(t)
	w.publish("1", "root, above c1 and c2")
	if got := w.visit("1.2.1"); got != "[root, above c1 and c2]" {
		t.Fatalf("at c1: %s", got)
	}
	if got := w.visit("1.3.1"); got != "[]" {
		t.Errorf("at c2: %s, want nothing", got)
	}
}
