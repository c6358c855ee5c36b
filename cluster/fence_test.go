package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/service"
	"github.com/seed84792017/cellcast/subscriptions"
)

// TestFencedOwnerAnswersNoResume: another writer took a shard's log (as a
// new owner does), and its old owner has not written since. A resume at
// the old owner writes nothing, yet is not answered there: its route
// would hear nothing more. Once the shard is served again, the resume
// replays what the subscriber missed.
func TestFencedOwnerAnswersNoResume(t *testing.T) {
	_, owner, cell, _, sid := subscribeAcross(t, time.Hour)
	want := publishAll(t, owner, cell, 0, 3)
	intrude(t, owner, cell)
	k := newSink()
	err := owner.Resume(context.Background(), sid, 0, "s", k, func(*subscriptions.ReplayResult) {})
	if !errors.Is(err, service.ErrUnavailable) {
		t.Fatalf("a resume at an owner fenced off its log: %v, want unavailable", err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		err := owner.Resume(context.Background(), sid, 0, "s", k, func(*subscriptions.ReplayResult) {})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shard was not served again: %v", err)
		}
	}
	waitGot(t, k, sid, want)
}
