package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A take reads its shard's log back whole and in order, over several
// direct-get batches, and stops at the sequence the log held when opened
// even if more is written meanwhile. It does so with the JetStream meta
// leader gone, as right after the kill of the node that held it: nothing
// in a take of an existing shard waits for a meta election.
func TestReplayReadsTheWholeLogWithoutAMetaLeader(t *testing.T) {
	servers := natsCluster(t, 3)
	connect := func(s *server.Server) jetstream.JetStream {
		nc, err := nats.Connect(s.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		return js
	}
	ctx := context.Background()
	var l *shardLog
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if l, err = openLog(ctx, connect(servers[0]), "t", "s0", 3, time.Hour); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	const n = 2*replayBatch + 300
	for i := range n {
		if _, err := l.append(ctx, appendEntry(nil, entryPub, fmt.Appendf(nil, "m%d", i))); err != nil {
			t.Fatal(err)
		}
	}

	// Move the stream's leader off the meta leader, then stop the latter.
	var meta *server.Server
	for _, s := range servers {
		if s.JetStreamIsLeader() {
			meta = s
		}
	}
	if meta == nil {
		t.Fatal("no meta leader")
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		info, err := l.info(ctx)
		if err == nil && info.Cluster.Leader != meta.Name() {
			break
		}
		if err == nil {
			l.heir = servers[(slices.Index(servers, meta)+1)%3].Name()
			l.stepDown(ctx, l.js.Conn())
		}
		if time.Now().After(deadline) {
			t.Fatal("the stream's leader stayed on the meta leader")
		}
	}
	var other *server.Server
	for _, s := range servers {
		if s != meta {
			other = s
		}
	}
	meta.Shutdown()

	// One step's time, well under nats-server's meta election timeout.
	tctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	taken, err := openLog(tctx, connect(other), "t", "s9", 3, time.Hour)
	if err != nil {
		t.Fatalf("opening the log without a meta leader: %v", err)
	}
	if _, err := l.append(ctx, appendEntry(nil, entryPub, []byte("later"))); err != nil {
		t.Logf("an append after the open: %v", err) // only its sequence matters
	}
	var got []string
	err = taken.replay(tctx, 0, func(seq uint64, batch []entry) error {
		if want := uint64(len(got) + 1); seq != want {
			return fmt.Errorf("sequence %d, want %d", seq, want)
		}
		for _, e := range batch {
			got = append(got, string(e.body))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("replaying without a meta leader: %v", err)
	}
	if len(got) != n {
		t.Fatalf("replayed %d messages, want %d", len(got), n)
	}
	for i, g := range got {
		if want := fmt.Sprintf("m%d", i); g != want {
			t.Fatalf("message %d is %q, want %q", i, g, want)
		}
	}
}
