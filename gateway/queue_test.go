package gateway

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"github.com/seed84792017/cellcast/delivery"
	"github.com/seed84792017/cellcast/subscriptions"
)

// TestPushNotesIsPushOneByOne: queueing a publication's notifications
// under one lock (pushNotes) leaves the queue as pushing each one
// (push, at roomNotification) does, stopping at the first refused: the
// same frames, bytes and count taken, whatever the bounds and whatever
// the queue held.
func TestPushNotesIsPushOneByOne(t *testing.T) {
	for seed := range int64(500) {
		rng := rand.New(rand.NewSource(seed))
		maxN, maxBytes := 1+rng.Intn(20), 1+rng.Intn(400)
		a := newSendQueue(maxN, maxBytes, func() {})
		b := newSendQueue(maxN, maxBytes, func() {})
		for range rng.Intn(2 * maxN) { // what the queue held already
			f := frame{data: make([]byte, rng.Intn(50))}
			a.push(f, roomReply)
			b.push(f, roomReply)
		}
		body := make([]byte, rng.Intn(60))
		p := &subscriptions.Publication{Tp: 7}
		ns := make([]delivery.Notification, rng.Intn(30))
		for i := range ns {
			ns[i] = delivery.Notification{Sid: fmt.Sprint("s", i), Seq: int64(i + 1), Pub: p, Body: body, Replayed: i%3 == 0}
		}
		bin := rng.Intn(2) == 0
		took := 0
		for i := range ns {
			n := &ns[i]
			if !a.push(frame{data: body, bin: bin, sid: n.Sid, seq: n.Seq, tp: p.Tp, replayed: n.Replayed}, roomNotification) {
				break
			}
			took++
		}
		if k := b.pushNotes(ns, body, bin); k != took {
			t.Fatalf("seed %d: pushNotes took %d, push one by one %d", seed, k, took)
		}
		if a.bytes != b.bytes || len(a.frames) != len(b.frames) || (len(a.frames) > 0 && !reflect.DeepEqual(a.frames, b.frames)) {
			t.Fatalf("seed %d: queues differ: %d bytes %d frames against %d bytes %d frames", seed, a.bytes, len(a.frames), b.bytes, len(b.frames))
		}
	}
}
