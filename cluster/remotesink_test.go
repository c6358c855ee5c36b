package cluster

import (
	"fmt"
	"testing"

	"github.com/seed84792017/cellcast/delivery"
)

// fakeSender records what an owner sends a holder, in order.
type fakeSender struct{ sent []string }

func (f *fakeSender) notify(route uint64, n *delivery.Notification) {
	f.sent = append(f.sent, fmt.Sprintf("note %d %d", route, n.Seq))
}
func (f *fakeSender) ended(l *lostRoute) { f.sent = append(f.sent, "ended "+l.Sid+" "+string(l.Why)) }
func (f *fakeSender) reply(subject string, _ *reply) error {
	f.sent = append(f.sent, "reply")
	return nil
}
func (f *fakeSender) cork()   {}
func (f *fakeSender) uncork() {}
func (f *fakeSender) close()  {}

// A route whose window ends before its operation's answer has gone out
// (a slow log append) holds its end with its notifications: sent first,
// the end would reach the holder before the route it ends, and be lost.
// The other routes of the same sink are not held meanwhile.
func TestRemoteSinkHoldsItsEnd(t *testing.T) {
	out := &fakeSender{}
	k := &remoteSink{o: &owner{lease: "n1#1"}, holder: "n2", out: out}
	k.hold(7)
	k.Notify(&delivery.Notification{Sid: "s", Seq: 3, Tag: 7})
	k.Notify(&delivery.Notification{Sid: "t", Seq: 4, Tag: 8}) // another route, live
	k.Ended(delivery.End{Sid: "s", Why: delivery.EndWindow, Tag: 7})
	if got, want := fmt.Sprint(out.sent), "[note 8 4]"; got != want {
		t.Fatalf("sent %s while route 7 was held, want %s", got, want)
	}
	out.reply("", nil) // the answer leaves, then the route is released
	k.release(7)
	if got, want := fmt.Sprint(out.sent[1:]), "[reply note 7 3 ended s window_over]"; got != want {
		t.Fatalf("sent %s, want %s", got, want)
	}
	// Released, an end goes at once, and a second release sends nothing.
	k.Ended(delivery.End{Sid: "s", Why: delivery.EndCancelled, Tag: 7})
	k.release(7)
	if got, want := fmt.Sprint(out.sent[4:]), "[ended s cancelled]"; got != want {
		t.Fatalf("then sent %s, want %s", got, want)
	}
	// A dropped route (its operation failed) sends nothing it held.
	k.hold(9)
	k.Notify(&delivery.Notification{Sid: "u", Seq: 5, Tag: 9})
	k.drop(9)
	k.release(9)
	if got, want := fmt.Sprint(out.sent[5:]), "[]"; got != want {
		t.Fatalf("a dropped route sent %s", got)
	}
	// A closing shard tells holders nothing: they resume elsewhere.
	k.o.closing = true
	k.Ended(delivery.End{Sid: "t", Why: delivery.EndWindow, Tag: 8})
	if len(out.sent) != 5 {
		t.Fatalf("a closing shard sent %v", out.sent[5:])
	}
}
