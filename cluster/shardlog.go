package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Entries of a shard's log. A log message is a batch of entries: a byte
// of kind, a uvarint length, the body.
const (
	entrySub    = 's' // a subscription record (listdb.EncodeSubscription)
	entryPub    = 'p' // a publication record (listdb.EncodePublication)
	entryCancel = 'c' // the sid of a cancelled subscription
	entryOwner  = 'o' // a new owner's id: fences out the one before
	// entryFence holds nothing: a resume writes it so that it is
	// answered only once the log shows this owner is still its writer.
	entryFence = 'f'
)

type entry struct {
	kind byte
	body []byte
}

func appendEntry(b []byte, kind byte, body []byte) []byte {
	b = append(b, kind)
	b = binary.AppendUvarint(b, uint64(len(body)))
	return append(b, body...)
}

func decodeBatch(b []byte) ([]entry, error) {
	var out []entry
	for len(b) > 0 {
		kind := b[0]
		l, k := binary.Uvarint(b[1:])
		if k <= 0 || uint64(len(b)-1-k) < l {
			return nil, errors.New("cluster: damaged log batch")
		}
		out = append(out, entry{kind: kind, body: b[1+k : 1+k+int(l)]})
		b = b[1+k+int(l):]
	}
	return out, nil
}

// shardLog is a shard's JetStream stream: the replicated log its owner
// appends to before it answers, and a new owner replays.
type shardLog struct {
	js      jetstream.JetStream
	stream  string
	subject string
	last    uint64 // the last sequence this owner knows the stream holds
	msgs    uint64 // messages the stream held when opened
	heir    string // when its leader is this node's NATS server: a current replica to hand it to
	owner   string // this node, in message ids
	appends uint64
}

// openLog creates or updates the shard's stream. maxAge covers the
// longest life of any record, so the stream holds the shard's live state.
func openLog(ctx context.Context, js jetstream.JetStream, shard, server string, replicas int, maxAge time.Duration) (*shardLog, error) {
	l := &shardLog{js: js, stream: streamPrefix + shard, subject: logSubject + shard, owner: server}
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	s, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: l.stream, Subjects: []string{l.subject}, Storage: jetstream.FileStorage,
		Replicas: replicas, MaxAge: maxAge, Discard: jetstream.DiscardOld,
		Description: "Cellcast shard " + shard + ": its replicated log (docs/cluster.md)",
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: stream %s: %w", l.stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster: stream %s: %w", l.stream, err)
	}
	l.last, l.msgs = info.State.LastSeq, info.State.Msgs
	if info.Cluster != nil && info.Cluster.Leader == server {
		for _, r := range info.Cluster.Replicas {
			if r.Current && !r.Offline {
				l.heir = r.Name
				break
			}
		}
	}
	return l, nil
}

// stepDown asks the stream's leader, when it is this node's own embedded
// NATS server, to hand leadership to another replica: then the loss of
// this node costs the shard a lease timeout, not also a raft election
// (4-9 s in nats-server).
func (l *shardLog) stepDown(ctx context.Context, nc *nats.Conn) error {
	if l.heir == "" {
		return nil
	}
	// Naming the next leader makes the handover immediate; without one
	// the replicas would wait out an election timeout.
	req := fmt.Sprintf(`{"placement":{"preferred":%q}}`, l.heir)
	_, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.LEADER.STEPDOWN."+l.stream, []byte(req))
	return err
}

// replay calls apply for each batch after sequence from, up to the last
// sequence the stream held when replay began, and returns that sequence.
func (l *shardLog) replay(ctx context.Context, from uint64, apply func(seq uint64, batch []entry) error) error {
	if l.last <= from || l.msgs == 0 {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, stepTimeout)
	c, err := l.js.OrderedConsumer(cctx, l.stream, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: from + 1})
	cancel()
	if err != nil {
		return fmt.Errorf("cluster: replaying %s: %w", l.stream, err)
	}
	it, err := c.Messages(jetstream.PullMaxMessages(1024))
	if err != nil {
		return fmt.Errorf("cluster: replaying %s: %w", l.stream, err)
	}
	defer it.Stop()
	for {
		mctx, cancel := context.WithTimeout(ctx, stepTimeout)
		m, err := it.Next(jetstream.NextContext(mctx))
		cancel()
		if err != nil {
			return fmt.Errorf("cluster: replaying %s: %w", l.stream, err)
		}
		md, err := m.Metadata()
		if err != nil {
			return err
		}
		batch, err := decodeBatch(m.Data())
		if err != nil {
			return fmt.Errorf("%w at %s sequence %d", err, l.stream, md.Sequence.Stream)
		}
		if err := apply(md.Sequence.Stream, batch); err != nil {
			return err
		}
		if md.Sequence.Stream >= l.last {
			return nil
		}
	}
}

// stepTimeout bounds each JetStream request of a take (opening the
// stream, creating the replay's consumer, each message of the replay): a
// request lost to a leader election is never answered, and the take is
// tried again from the start, so the shard is served soon after the
// election ends rather than when one long attempt gives up. An election
// takes 1-2 s with the embedded servers' timing (broker.ClusterConfig's
// ElectionTimeout), so a step waits no longer than that.
const stepTimeout = time.Second

// An append tries for appendPatience, appendTimeout a try: a stream whose
// leader went away answers nothing (or "no responders") until its
// replicas elect another (4-9 s in nats-server), and waiting that out,
// with the same message id, is cheaper than rebuilding the shard.
const (
	appendTimeout  = 2 * time.Second
	appendPatience = 20 * time.Second
)

// errFenced: another node appended to the shard's log; this one no
// longer owns it.
var errFenced = errors.New("cluster: another node wrote to the shard's log")

// append writes a batch after the last sequence this owner knows, so an
// owner that lost its lease without knowing cannot write after the next.
func (l *shardLog) append(ctx context.Context, batch []byte) (uint64, error) {
	// A message id makes a retry safe: if the first try was stored and
	// only its ack was lost (the stream changing leaders), JetStream
	// answers the retry with the first one's ack instead of storing twice.
	l.appends++
	id := fmt.Sprintf("%s-%d-%d", l.owner, l.last, l.appends)
	var err error
	for start := time.Now(); time.Since(start) < appendPatience; {
		actx, cancel := context.WithTimeout(ctx, appendTimeout)
		var ack *jetstream.PubAck
		ack, err = l.js.Publish(actx, l.subject, batch, jetstream.WithMsgID(id),
			jetstream.WithExpectLastSequence(l.last), jetstream.WithExpectStream(l.stream))
		cancel()
		if err == nil {
			l.last = ack.Sequence
			return ack.Sequence, nil
		}
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			return 0, errFenced
		}
		if ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond) // "no responders" comes back at once
	}
	return 0, fmt.Errorf("cluster: appending to %s: %w", l.stream, err)
}
