package cluster

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/seed84792017/cellcast/delivery"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/protocol"
	"github.com/seed84792017/cellcast/service"
	"github.com/seed84792017/cellcast/subscriptions"
)

// Subjects between nodes. A shard's owner alone listens on its request
// subject; a node reads everything addressed to it (replies,
// notifications, lost routes) on one subscription, so a reply and the
// notifications sent after it arrive in the order they were sent.
const (
	shardSubject = "cellcast.cluster.shard." // + shard
	nodeSubject  = "cellcast.cluster.node."  // + node + ".r.<req>" | ".n" | ".l"
	logSubject   = "cellcast.cluster.log."   // + shard: the shard's stream
	streamPrefix = "CELLCAST_"               // + shard
	leaseBucket  = "cellcast_leases"         // shard -> node; node.<id> -> its last write
	aliveSubject = "cellcast.cluster.alive." // + node: its heartbeat, every LeaseTTL/4
	leaving      = "leaving"                 // the last heartbeat's body: the node stops
)

// Operations a node asks of a shard's owner.
const (
	opSubscribe   = "sub"
	opPublish     = "pub"
	opUnsubscribe = "unsub"
	opResume      = "resume"
	opDetach      = "detach"
	opQuery       = "query"
	opPriors      = "priors" // a user's subscriptions a self-join elsewhere leaves out
)

// request is one operation sent to a shard's owner (requestcodec.go).
type request struct {
	Op     string
	Holder string // the node holding the subscriber
	Sub    *subscriptions.SubscribeRequest
	Pub    *subscriptions.PublishRequest
	Sid    string
	Sids   []string // a detach's subscriptions
	After  int64
	Route  uint64 // the holder's number for the route it is making
	Epoch  uint64 // the holder's epoch of kept past results (refs.go)
	Owner  string // the uid that must own Sid
	Query  *service.Query
	Skip   int // a query's results already received
	// stamped, not sent, hears that the request has left for its shard:
	// the owner runs requests in the order they come, so that is its place.
	stamped subscriptions.Stamped
}

// reply is the owner's answer (replycodec.go).
type reply struct {
	Err   *wireError
	Sid   string
	SubR  *subscriptions.SubscribeResult
	PubR  *subscriptions.PublishResult
	Match int // len(PubR.Matches), which stay home
	Rep   *subscriptions.ReplayResult
	N     int                          // len(Rep.Pubs), which follow as notifications
	Node  string                       // the owner that answered
	Pubs  []subscriptions.Publication  // a page of a query's results
	More  bool                         // more results follow Pubs
	Prior []subscriptions.Subscription // a priors request's answer
	// Epoch is the holder's epoch when it asked (request.Epoch): an
	// owner refers to past results it sent the holder only within it.
	// It does not cross on its own: it rides with the references.
	Epoch uint64
}

// wireError carries an error's kind across nodes, so that a client gets
// the code it would get from one node.
type wireError struct {
	Kind  string
	Msg   string
	Retry time.Duration
}

func (e *wireError) Error() string { return e.Msg }

// notification is what a shard owner sends to the node holding a
// subscription: the route (the holder's number for it, which names the
// sid and user), the sequence number, the publication and its rendering
// (every node renders alike).
type notification struct {
	Route uint64
	Seq   int64
	// Prev is the sequence number the owner sent on the route before this
	// one (delivery.Notification.Prev): a holder that last passed on less
	// missed a batch, and resumes the route from what it has.
	Prev     int64
	Replayed bool
	Pub      *subscriptions.Publication // shared by the batch's notifications of it
	Body     []byte
}

// lostRoute tells the holder that a subscription no longer routes to it.
type lostRoute struct {
	Sid  string             `json:"sid"`
	Uid  string             `json:"uid"`
	Why  delivery.EndReason `json:"why"`
	Last int64              `json:"last"`
	Node string             `json:"node"` // the owner that sent it
}

// encodeNote writes a notification on route of the batch's publication
// pub: its sequence number, and how far back the one before it on the
// route was.
func encodeNote(b []byte, route uint64, n *delivery.Notification, pub uint64) []byte {
	b = binary.AppendUvarint(b, route)
	b = binary.AppendVarint(b, n.Seq)
	b = binary.AppendVarint(b, n.Seq-n.Prev)
	flag := byte(0)
	if n.Replayed {
		flag = 1
	}
	b = append(b, flag)
	return binary.AppendUvarint(b, pub)
}

var errShort = errors.New("cluster: damaged notification batch")

// batchReader is what an outbox's batch is read into, entry by entry.
type batchReader struct {
	// notes gets each run of notifications between other entries, so
	// that the holder takes its lock once a run; the slice is
	// readBatch's again once notes returns.
	notes   func([]notification)
	ended   func(*lostRoute)
	replied func(call string, data []byte)
	// run and pubs are kept from batch to batch: a batch holds hundreds
	// of notifications, and growing them anew each time showed in the
	// holding node's profile. Only one goroutine reads with a reader.
	run  []notification
	pubs []notification // the batch's publications, by index, with their renderings
}

// readBatch reads an outbox's batch into r, in order. A damaged batch is
// an error; what came before the damage has been read.
func (r *batchReader) readBatch(b []byte) error {
	err := r.readEntries(b)
	if len(r.run) > 0 {
		r.notes(r.run)
	}
	clear(r.run) // the publications are the sinks' now, not the reader's
	clear(r.pubs)
	r.run, r.pubs = r.run[:0], r.pubs[:0]
	return err
}

// readEntries is readBatch gathering notifications in r.run.
func (r *batchReader) readEntries(b []byte) error {
	flush := func() {
		if len(r.run) > 0 {
			r.notes(r.run)
			clear(r.run)
			r.run = r.run[:0]
		}
	}
	w := wireReader{b: b}
	for len(w.b) > 0 {
		switch kind := w.byte(); kind {
		case batchPub:
			rec, body := w.bytes(), w.bytes()
			if w.bad {
				return errShort
			}
			p, err := listdb.DecodePublication(rec)
			if err != nil {
				return fmt.Errorf("cluster: notification batch: %w", err)
			}
			r.pubs = append(r.pubs, notification{Pub: &p, Body: body})
		case batchNote:
			route, seq := w.uvarint(), w.varint()
			prev := seq - w.varint()
			replayed := w.byte() == 1
			i := w.uvarint()
			if w.bad || i >= uint64(len(r.pubs)) {
				return errShort
			}
			r.run = append(r.run, notification{Route: route, Seq: seq, Prev: prev, Replayed: replayed, Pub: r.pubs[i].Pub, Body: r.pubs[i].Body})
		case batchEnded:
			j := w.bytes()
			if w.bad {
				return errShort
			}
			var l lostRoute
			if err := json.Unmarshal(j, &l); err != nil {
				return fmt.Errorf("cluster: notification batch: %w", err)
			}
			flush()
			r.ended(&l)
		case batchReply:
			call, data := w.bytes(), w.bytes()
			if w.bad {
				return errShort
			}
			flush()
			r.replied(string(call), data)
		default:
			return fmt.Errorf("cluster: notification batch: entry kind %d", kind)
		}
	}
	return nil
}

// Error kinds between nodes. An error class that alone gets a client's
// code (gateway.CodeOf) goes as that code; service.Query's two errors,
// bad_request to a client like subscriptions.ErrBadRequest, keep kinds of
// their own, so that a caller on the holding node still tells them apart
// as service promises. Every node runs one release, so the kinds may
// change with it.
const (
	kindOverloaded  = protocol.CodeOverloaded  // delivery.OverloadedError, with its RetryAfter
	kindForbidden   = protocol.CodeForbidden   // delivery.ErrForbidden
	kindNotFound    = protocol.CodeNotFound    // subscriptions.ErrUnknownSid
	kindBadRequest  = protocol.CodeBadRequest  // subscriptions.ErrBadRequest
	kindUnavailable = protocol.CodeUnavailable // service.ErrUnavailable
	kindInternal    = protocol.CodeInternal    // anything else: a failure
	kindBadQuery    = "bad_query"              // service.ErrBadQuery, its message kept whole
	kindNoCatalog   = "no_catalog"             // service.ErrNoCatalog
)

// toWire carries err's kind to another node.
func toWire(err error) *wireError {
	var oe *delivery.OverloadedError
	w := &wireError{Kind: kindInternal, Msg: err.Error()}
	switch {
	case errors.As(err, &oe):
		w.Kind, w.Retry = kindOverloaded, oe.RetryAfter
	case errors.Is(err, delivery.ErrForbidden):
		w.Kind = kindForbidden
	case errors.Is(err, service.ErrBadQuery):
		w.Kind = kindBadQuery
	case errors.Is(err, service.ErrNoCatalog):
		w.Kind = kindNoCatalog
	case errors.Is(err, subscriptions.ErrUnknownSid):
		w.Kind = kindNotFound
	case errors.Is(err, subscriptions.ErrBadRequest):
		w.Kind = kindBadRequest
	case errors.Is(err, service.ErrUnavailable):
		w.Kind = kindUnavailable
	}
	return w
}

// fromWire turns a wire error back into one that errors.Is and errors.As
// match as on the node that made it; an internal one stays a *wireError,
// which matches nothing, as a failure's class does not cross.
func fromWire(w *wireError) error {
	switch w.Kind {
	case kindOverloaded:
		return &delivery.OverloadedError{RetryAfter: w.Retry}
	case kindForbidden:
		return fmt.Errorf("%w (%s)", delivery.ErrForbidden, w.Msg)
	case kindBadQuery: // the message a single broker would give
		return fmt.Errorf("%w%s", service.ErrBadQuery, strings.TrimPrefix(w.Msg, service.ErrBadQuery.Error()))
	case kindNoCatalog:
		return service.ErrNoCatalog
	case kindNotFound:
		return fmt.Errorf("%w (%s)", subscriptions.ErrUnknownSid, w.Msg)
	case kindBadRequest:
		return fmt.Errorf("%w (%s)", subscriptions.ErrBadRequest, w.Msg)
	case kindUnavailable:
		return fmt.Errorf("%w (%s)", service.ErrUnavailable, w.Msg)
	}
	return w
}
