package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed84792017/cellcast/dewey"
)

// topicBucket holds the cluster's topic registry: key "i.<id>" (the id's
// components joined by dots), value the topic's path. A create decides
// who gets an id, so every node agrees (dewey.NewSharedTopics).
const topicBucket = "cellcast_topics"

// topicTimeout bounds each request to the registry.
const topicTimeout = 5 * time.Second

// kvTopics is a dewey.SharedTopicStore in a JetStream KV bucket.
type kvTopics struct {
	kv jetstream.KeyValue
	nc *nats.Conn
}

func topicKey(id dewey.ID) string {
	var b strings.Builder
	b.WriteString("i")
	for _, c := range id {
		b.WriteByte('.')
		b.WriteString(strconv.FormatUint(uint64(c), 10))
	}
	return b.String()
}

// LoadTopics reads every assignment (a watch delivers the current values,
// then nil). A watch that does not finish in its time (its consumer can
// stall while the bucket's stream changes leader) is started again with
// twice the time, within loadTimeout in all; fn may so see an assignment
// twice.
func (s kvTopics) LoadTopics(fn func(path string, id dewey.ID) error) error {
	deadline := time.Now().Add(loadTimeout)
	for attempt := loadAttempt; ; attempt *= 2 {
		err := s.loadOnce(fn, min(attempt, time.Until(deadline)))
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || time.Until(deadline) <= 0 {
			return err
		}
	}
}

// loadTimeout bounds LoadTopics, loadAttempt its first watch.
var loadTimeout, loadAttempt = time.Minute, 5 * time.Second

func (s kvTopics) loadOnce(fn func(path string, id dewey.ID) error, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	w, err := s.kv.Watch(ctx, "i.>", jetstream.IgnoreDeletes())
	if err != nil {
		return fmt.Errorf("cluster: topic registry: %w", err)
	}
	defer w.Stop()
	for {
		select {
		case e := <-w.Updates():
			if e == nil {
				return nil
			}
			id, err := dewey.Parse(strings.TrimPrefix(e.Key(), "i."))
			if err != nil {
				return fmt.Errorf("cluster: topic registry key %q: %w", e.Key(), err)
			}
			if err := fn(string(e.Value()), id); err != nil {
				return err
			}
		case <-ctx.Done():
			return fmt.Errorf("cluster: topic registry: %w", ctx.Err())
		}
	}
}

// SaveTopic creates id's key; one that exists is fine if it holds path.
func (s kvTopics) SaveTopic(path string, id dewey.ID) error {
	ctx, cancel := context.WithTimeout(context.Background(), topicTimeout)
	defer cancel()
	_, err := s.kv.Create(ctx, topicKey(id), []byte(path))
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return err
	}
	return existing(ctx, path, func() (string, bool, error) { return s.LookupTopic(id) })
}

// existing decides a create refused because the key exists: fine if it
// holds path, ErrTopicTaken if another. The stream's leader refuses a
// second create while the first is still being replicated, before
// either can read it, so "not found" is looked at again until ctx ends:
// taking it for "taken" would give two nodes two ids for one topic.
func existing(ctx context.Context, path string, lookup func() (string, bool, error)) error {
	for {
		have, ok, err := lookup()
		switch {
		case err != nil:
			return err
		case ok && have != path:
			return dewey.ErrTopicTaken
		case ok:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: topic registry: %q exists but cannot be read: %w", path, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// LookupTopic reads id's path. A direct get, which any replica serves, is
// right when it finds the key (keys are only ever created); a replica
// behind the leader may not have it yet, so "not found" asks the stream's
// leader, which acknowledged every create that returned.
func (s kvTopics) LookupTopic(id dewey.ID) (string, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), topicTimeout)
	defer cancel()
	e, err := s.kv.Get(ctx, topicKey(id))
	if err == nil {
		return string(e.Value()), true, nil
	}
	if !errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", false, err
	}
	return s.leaderLookup(ctx, id)
}

// leaderLookup reads id's path from the stream's leader (the JetStream
// API's message get, not the direct get any replica answers).
func (s kvTopics) leaderLookup(ctx context.Context, id dewey.ID) (string, bool, error) {
	req, _ := json.Marshal(map[string]string{"last_by_subj": "$KV." + topicBucket + "." + topicKey(id)})
	m, err := s.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET.KV_"+topicBucket, req)
	if err != nil {
		return "", false, err
	}
	var rep struct {
		Message *struct {
			Data []byte `json:"data"`
		} `json:"message"`
		Error *struct {
			Code        int    `json:"code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	switch err := json.Unmarshal(m.Data, &rep); {
	case err != nil:
		return "", false, fmt.Errorf("cluster: topic registry: %w", err)
	case rep.Error != nil && rep.Error.Code == 404:
		return "", false, nil
	case rep.Error != nil:
		return "", false, fmt.Errorf("cluster: topic registry: %s", rep.Error.Description)
	case rep.Message == nil:
		return "", false, errors.New("cluster: topic registry: an empty answer")
	}
	return string(rep.Message.Data), true, nil
}

// OpenTopics opens the cluster's topic registry, creating its bucket
// (replicas copies) if needed, and loads what every node assigned so far.
func OpenTopics(ctx context.Context, nc *nats.Conn, replicas, maxDepth int) (*dewey.Topics, error) {
	if replicas == 0 {
		replicas = 3
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: topicBucket,
		Description: "Cellcast: topic path of each topic id", Replicas: replicas, Storage: jetstream.FileStorage})
	if err != nil {
		return nil, fmt.Errorf("cluster: topic bucket: %w", err)
	}
	return dewey.NewSharedTopics(kvTopics{kv, nc}, maxDepth)
}
