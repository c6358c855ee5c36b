package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/delivery"
	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/subscriptions"
)

// An outbox sends a holder its notifications and replies in order, in
// batches; while corked (an owner answering a log append's operations)
// nothing leaves, and on uncork all of it leaves in one message.
func TestOutboxRepliesRideBatches(t *testing.T) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	t.Cleanup(s.Shutdown)
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server did not start")
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	batches := make(chan *nats.Msg, 16)
	alone := make(chan *nats.Msg, 16)
	for subject, ch := range map[string]chan *nats.Msg{nodeSubject + "h.n": batches, "elsewhere": alone} {
		if _, err := nc.ChanSubscribe(subject, ch); err != nil {
			t.Fatal(err)
		}
	}
	nc.Flush()
	var sent counters
	b := newOutbox(nc, "h", &sent, sentRefs{instance: 1, render: testRender, counts: &sent})
	t.Cleanup(b.close)

	// read decodes one batch into what it held, in order.
	read := func(m *nats.Msg) []string {
		var got []string
		err := (&batchReader{
			notes: func(ns []notification) {
				for _, n := range ns {
					got = append(got, fmt.Sprintf("note %d %s", n.Route, n.Pub.Desc))
				}
			},
			ended: func(l *lostRoute) { got = append(got, "ended "+l.Sid) },
			replied: func(call string, data []byte) {
				r, err := decodeReply(data, newKeptRefs(0))
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, fmt.Sprintf("reply %s %s", call, r.Sid))
			},
		}).readBatch(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	next := func(ch chan *nats.Msg) *nats.Msg {
		select {
		case m := <-ch:
			return m
		case <-time.After(5 * time.Second):
			t.Fatal("nothing arrived")
			return nil
		}
	}
	pub := &subscriptions.Publication{Uid: "p", Cell: subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1, 2}}, Tp: 10, Tmax: 20, Desc: "fire"}
	note := func(route uint64) {
		b.notify(route, &delivery.Notification{Seq: int64(route), Pub: pub, Body: []byte("{}")})
	}

	b.cork()
	note(1)
	b.reply(nodeSubject+"h.r.a", &reply{Sid: "s1"})
	b.reply(nodeSubject+"h.r.b", &reply{Sid: "s2"})
	b.ended(&lostRoute{Sid: "s0"})
	note(2)
	select {
	case m := <-batches:
		t.Fatalf("a corked outbox sent %v", read(m))
	case <-time.After(100 * time.Millisecond):
	}
	b.uncork()
	want := fmt.Sprint([]string{"note 1 fire", "reply a s1", "reply b s2", "ended s0", "note 2 fire"})
	if got := fmt.Sprint(read(next(batches))); got != want {
		t.Fatalf("one message after uncork: got %s, want %s", got, want)
	}

	// Uncorked, a reply leaves at once; one to another subject leaves
	// alone, after what was queued before it.
	b.reply(nodeSubject+"h.r.c", &reply{Sid: "s3"})
	if got := fmt.Sprint(read(next(batches))); got != "[reply c s3]" {
		t.Fatalf("got %s", got)
	}
	b.cork()
	note(3)
	b.reply("elsewhere", &reply{Sid: "s4"})
	if got := fmt.Sprint(read(next(batches))); got != "[note 3 fire]" {
		t.Fatalf("before the lone reply: got %s", got)
	}
	if r, err := decodeReply(next(alone).Data, newKeptRefs(0)); err != nil || r.Sid != "s4" {
		t.Fatalf("the lone reply: %+v, %v", r, err)
	}
	b.uncork()
	if sent.batchedReplies.Load() != 3 || sent.replies.Load() != 1 || sent.batches.Load() != 3 {
		t.Fatalf("counted %d batched replies, %d alone, %d batches; want 3, 1, 3", sent.batchedReplies.Load(), sent.replies.Load(), sent.batches.Load())
	}
}
