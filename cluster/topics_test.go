package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed84792017/cellcast/dewey"
)

// TestTopicRegistry: the registry on a three-server JetStream cluster. A
// create decides an id; saving it again for the same path is fine, for
// another path it is taken; the leader read and the direct get agree, and
// a second registry loads what the first assigned.
func TestTopicRegistry(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three clustered nats-servers")
	}
	servers := natsCluster(t, 3)
	nc, err := nats.Connect(servers[1].ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var topics *dewey.Topics
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		topics, err = OpenTopics(ctx, nc, 3, 8)
		cancel()
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	id, err := topics.Resolve("sports/soccer")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	store := kvTopics{nc: nc}
	if store.kv, err = js.KeyValue(ctx, topicBucket); err != nil {
		t.Fatal(err)
	}
	for _, look := range []func(dewey.ID) (string, bool, error){
		store.LookupTopic,
		func(id dewey.ID) (string, bool, error) { return store.leaderLookup(ctx, id) },
	} {
		if p, ok, err := look(id); err != nil || !ok || p != "sports/soccer" {
			t.Fatalf("lookup of %v: %q %v %v", id, p, ok, err)
		}
		if p, ok, err := look(dewey.ID{7, 7, 7}); err != nil || ok {
			t.Fatalf("lookup of an id nobody assigned: %q %v %v", p, ok, err)
		}
	}
	if err := store.SaveTopic("sports/soccer", id); err != nil {
		t.Fatalf("saving an assignment again: %v", err)
	}
	if err := store.SaveTopic("sports/tennis", id); !errors.Is(err, dewey.ErrTopicTaken) {
		t.Fatalf("saving another path at a taken id: %v", err)
	}
	ctx5, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	again, err := OpenTopics(ctx5, nc, 3, 8)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := again.Lookup("sports/soccer"); !ok || !got.Equal(id) {
		t.Fatalf("a second registry loaded %v %v, want %v", got, ok, id)
	}
	if again.Len() != 2 {
		t.Fatalf("a second registry knows %d topics, want 2 (sports and sports/soccer)", again.Len())
	}
}

// TestExistingKeyNotYetReadable: a create refused because another node's
// create of the key is still in flight is not taken for a different
// path; it waits until the key can be read.
func TestExistingKeyNotYetReadable(t *testing.T) {
	lookups := 0
	lookup := func(value string, after int) func() (string, bool, error) {
		lookups = 0
		return func() (string, bool, error) {
			if lookups++; lookups <= after {
				return "", false, nil
			}
			return value, true, nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := existing(ctx, "news", lookup("news", 3)); err != nil || lookups != 4 {
		t.Fatalf("the same path, readable at the fourth look: %v after %d looks", err, lookups)
	}
	if err := existing(ctx, "news", lookup("sports", 2)); !errors.Is(err, dewey.ErrTopicTaken) {
		t.Fatalf("another path: %v", err)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	if err := existing(short, "news", lookup("news", 1<<30)); err == nil || errors.Is(err, dewey.ErrTopicTaken) {
		t.Fatalf("never readable: %v, want an error that is not ErrTopicTaken", err)
	}
}

// stallingKV is a topic bucket whose first watches deliver one entry and
// then stall, as a watch whose consumer is lost does; later ones deliver
// every entry and the end.
type stallingKV struct {
	jetstream.KeyValue
	stalls  int
	watches int
	entries map[string]string
}

type fakeEntry struct {
	jetstream.KeyValueEntry
	key, value string
}

func (e fakeEntry) Key() string   { return e.key }
func (e fakeEntry) Value() []byte { return []byte(e.value) }

type fakeWatcher struct{ ch chan jetstream.KeyValueEntry }

func (w fakeWatcher) Updates() <-chan jetstream.KeyValueEntry { return w.ch }
func (w fakeWatcher) Stop() error                             { return nil }

func (kv *stallingKV) Watch(context.Context, string, ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	kv.watches++
	ch := make(chan jetstream.KeyValueEntry, len(kv.entries)+1)
	for k, v := range kv.entries {
		ch <- fakeEntry{key: k, value: v}
		if kv.watches <= kv.stalls {
			return fakeWatcher{ch}, nil
		}
	}
	ch <- nil
	return fakeWatcher{ch}, nil
}

// TestLoadTopicsWatchesAgain: a watch that stalls before its end is
// started again, with more time, until one finishes within the limit;
// every assignment is loaded. One that never finishes fails at the limit.
func TestLoadTopicsWatchesAgain(t *testing.T) {
	defer func(total, first time.Duration) { loadTimeout, loadAttempt = total, first }(loadTimeout, loadAttempt)
	loadTimeout, loadAttempt = 2*time.Second, 50*time.Millisecond
	kv := &stallingKV{stalls: 2, entries: map[string]string{"i.1": "sports", "i.1.1": "sports/soccer", "i.2": "news"}}
	topics, err := dewey.NewSharedTopics(kvTopics{kv: kv}, 8)
	if err != nil {
		t.Fatal(err)
	}
	if kv.watches != 3 || topics.Len() != 3 {
		t.Fatalf("%d watches loaded %d topics, want 3 and 3", kv.watches, topics.Len())
	}
	if id, ok := topics.Lookup("sports/soccer"); !ok || !id.Equal(dewey.ID{1, 1}) {
		t.Fatalf("sports/soccer is %v %v", id, ok)
	}
	kv = &stallingKV{stalls: 1 << 30, entries: map[string]string{"i.1": "sports"}}
	start := time.Now()
	if err := (kvTopics{kv: kv}).LoadTopics(func(string, dewey.ID) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a watch that never ends: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("gave up after %v, past its limit", d)
	}
}
