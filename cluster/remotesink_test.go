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
func TestRemoteSinkHoldsItsEnd(t *testing.T) {
	out := &fakeSender{}
	o := &owner{lease: "n1#1", sinks: map[string]*remoteSink{}}
	k := &remoteSink{o: o, holder: "n2", sid: "s", out: out, route: 7, held: true}
	o.sinks["n2 s"] = k
	k.Notify(&delivery.Notification{Sid: "s", Seq: 3})
	k.Ended(delivery.End{Sid: "s", Why: delivery.EndWindow})
	if len(out.sent) != 0 {
		t.Fatalf("sent while held: %v", out.sent)
	}
	if o.sinks["n2 s"] != nil {
		t.Fatal("the owner still routes an ended subscription")
	}
	out.reply("", nil) // the answer leaves, then the route is released
	k.release()
	if got, want := fmt.Sprint(out.sent), "[reply note 7 3 ended s window_over]"; got != want {
		t.Fatalf("sent %s, want %s", got, want)
	}
	// Live, an end goes at once, and only once.
	k.Ended(delivery.End{Sid: "s", Why: delivery.EndCancelled})
	k.release()
	if got, want := fmt.Sprint(out.sent[3:]), "[ended s cancelled]"; got != want {
		t.Fatalf("then sent %s, want %s", got, want)
	}
}
