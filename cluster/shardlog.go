package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
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
	want := jetstream.StreamConfig{
		Name: l.stream, Subjects: []string{l.subject}, Storage: jetstream.FileStorage,
		Replicas: replicas, MaxAge: maxAge, Discard: jetstream.DiscardOld,
		AllowDirect: true, // a take replays by direct gets (replay)
		Description: "Cellcast shard " + shard + ": its replicated log (docs/cluster.md)",
	}
	// The stream's leader answers its info; creating or changing it needs
	// the meta leader too, which a kill may have just taken away, so a
	// take asks for that only when the stream is missing or differs.
	info, err := l.info(ctx)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound) || err == nil && !sameLog(info.Config, want):
		if _, err = js.CreateOrUpdateStream(ctx, want); err != nil {
			return nil, fmt.Errorf("cluster: stream %s: %w", l.stream, err)
		}
		if info, err = l.info(ctx); err != nil {
			return nil, fmt.Errorf("cluster: stream %s: %w", l.stream, err)
		}
	case err != nil:
		return nil, fmt.Errorf("cluster: stream %s: %w", l.stream, err) // its leader elects: the take tries again
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

// sameLog: whether an existing stream has the settings a shard log needs.
func sameLog(have, want jetstream.StreamConfig) bool {
	return len(have.Subjects) == 1 && have.Subjects[0] == want.Subjects[0] &&
		have.Storage == want.Storage && have.Replicas == want.Replicas &&
		have.MaxAge == want.MaxAge && have.Discard == want.Discard &&
		have.AllowDirect == want.AllowDirect && have.Description == want.Description
}

// info asks the stream's leader for the stream's settings and state.
func (l *shardLog) info(ctx context.Context) (*jetstream.StreamInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	s, err := l.js.Stream(ctx, l.stream)
	if err != nil {
		return nil, err
	}
	return s.CachedInfo(), nil
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
// sequence the stream held when the log was opened.
//
// It reads with batched direct gets, which any current replica answers,
// not through a consumer: creating a consumer needs the JetStream meta
// leader, and right after a kill that may be the node that died, so a
// take would wait out a meta election on top of the lease.
func (l *shardLog) replay(ctx context.Context, from uint64, apply func(seq uint64, batch []entry) error) error {
	if l.last <= from || l.msgs == 0 {
		return nil
	}
	nc := l.js.Conn()
	inbox := nc.NewInbox()
	msgs := make(chan *nats.Msg, replayBatch+1)
	sub, err := nc.ChanSubscribe(inbox, msgs)
	if err != nil {
		return fmt.Errorf("cluster: replaying %s: %w", l.stream, err)
	}
	defer sub.Unsubscribe()
	subject := "$JS.API.DIRECT.GET." + l.stream
	for next := from + 1; next <= l.last; {
		req := fmt.Sprintf(`{"seq":%d,"batch":%d}`, next, replayBatch)
		if err := nc.PublishRequest(subject, inbox, []byte(req)); err != nil {
			return fmt.Errorf("cluster: replaying %s: %w", l.stream, err)
		}
		got, done, err := l.replayBatch(ctx, msgs, apply)
		if err != nil || done {
			return err
		}
		if got == 0 {
			// The replica that answered holds nothing from next on: a
			// follower still catching up, or the rest expired meanwhile.
			if info, err := l.info(ctx); err == nil && info.State.FirstSeq > l.last {
				return nil
			}
			select {
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
				return fmt.Errorf("cluster: replaying %s: %w", l.stream, ctx.Err())
			}
			continue
		}
		next = got + 1
	}
	return nil
}

// replayBatch applies one direct get's answer, up to l.last, and returns
// the last sequence applied (0 if none), and whether the answer went past
// l.last.
func (l *shardLog) replayBatch(ctx context.Context, msgs <-chan *nats.Msg, apply func(seq uint64, batch []entry) error) (last uint64, done bool, err error) {
	for {
		var m *nats.Msg
		select {
		case m = <-msgs:
		case <-time.After(stepTimeout):
			return 0, false, fmt.Errorf("cluster: replaying %s: no answer to a direct get after sequence %d", l.stream, last)
		case <-ctx.Done():
			return 0, false, fmt.Errorf("cluster: replaying %s: %w", l.stream, ctx.Err())
		}
		seq, end, err := directAnswer(m)
		if err != nil {
			return 0, false, fmt.Errorf("cluster: replaying %s: %w", l.stream, err)
		}
		if end { // nothing from the asked sequence on
			return last, done, nil
		}
		if seq > l.last {
			done = true // written after the log was opened
			continue
		}
		batch, err := decodeBatch(m.Data)
		if err != nil {
			return 0, false, fmt.Errorf("%w at %s sequence %d", err, l.stream, seq)
		}
		if err := apply(seq, batch); err != nil {
			return 0, false, err
		}
		last = seq
	}
}

// directAnswer reads one message of a batched direct get's answer: a
// stored message and its sequence, or the end of the answer (204, or
// 404: nothing matched), or an error the server sent instead.
func directAnswer(m *nats.Msg) (seq uint64, end bool, err error) {
	switch m.Header.Get("Status") {
	case "":
	case "204", "404":
		return 0, true, nil
	default:
		return 0, false, fmt.Errorf("direct get answered %s %s", m.Header.Get("Status"), m.Header.Get("Description"))
	}
	seq, err = strconv.ParseUint(m.Header.Get("Nats-Sequence"), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("a direct get's answer has no sequence")
	}
	return seq, false, nil
}

// replayBatch is how many log messages one direct get asks for.
const replayBatch = 1024

// stepTimeout bounds each JetStream request of a take (opening the
// stream, each direct get of the replay): a request lost to a leader
// election is never answered, and the take is tried again from the start,
// so the shard is served soon after the election ends rather than when
// one long attempt gives up. An election
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
