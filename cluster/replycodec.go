package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/subscriptions"
)

// Replies travel in a binary form, with each publication and subscription
// in the store's record encoding: a subscribe's reply carries its past
// results, often hundreds, and decoding them from JSON was a quarter of a
// cluster node's CPU on the moving-user workload.
//
//	reply   := replyFormat flags [err] sid node match n [subr] [pubr] [rep] pubs prior
//	err     := kind msg retry(varint ns)
//	subr    := record(sub) past               (refs.go)
//	pubr    := record(pub) list(recent)       (the matches stay home)
//	rep     := record(sub) now(varint) list(pubs)
//	list    := uvarint(0 for nil, else count+1) record...
//	record  := uvarint(len) bytes             (strings alike)
const replyFormat byte = 3

// Reply flags.
const (
	hasErr = 1 << iota
	hasSubR
	hasPubR
	hasRep
	subStored
	pubStored
	moreFollow
)

// errBadReply is matched by every error decodeReply returns.
var errBadReply = errors.New("cluster: malformed reply")

// encodeReply writes r. With refs (the owner's record of what the holder
// keeps) a subscribe's past results go as references and renderings,
// else as records.
func encodeReply(r *reply, refs *sentRefs) []byte {
	var flags flagSet
	set := flags.set
	set(hasErr, r.Err != nil)
	set(hasSubR, r.SubR != nil)
	set(hasPubR, r.PubR != nil)
	set(hasRep, r.Rep != nil)
	set(subStored, r.SubR != nil && r.SubR.Stored)
	set(pubStored, r.PubR != nil && r.PubR.Stored)
	set(moreFollow, r.More)
	b := []byte{replyFormat, byte(flags)}
	if e := r.Err; e != nil {
		b = appendBytes(b, []byte(e.Kind))
		b = appendBytes(b, []byte(e.Msg))
		b = binary.AppendVarint(b, int64(e.Retry))
	}
	b = appendBytes(b, []byte(r.Sid))
	b = appendBytes(b, []byte(r.Node))
	b = binary.AppendUvarint(b, uint64(r.Match))
	b = binary.AppendUvarint(b, uint64(r.N))
	if s := r.SubR; s != nil {
		b = appendBytes(b, listdb.EncodeSubscription(&s.Sub))
		switch {
		case s.Rendered != nil:
			b = appendRendered(b, s.Rendered)
		case refs != nil:
			b = refs.appendPast(b, s.Past, r.Node, r.Epoch, time.Now().UnixNano())
		case s.Past != nil:
			b = binary.AppendUvarint(b, uint64(len(s.Past))+1)
			b = append(b, pastRecords)
			b = appendRecords(b, s.Past)
		default:
			b = append(b, 0)
		}
	}
	if p := r.PubR; p != nil {
		b = listdb.AppendSizedPublication(b, &p.Pub)
		b = appendPubs(b, p.Recent)
	}
	if rp := r.Rep; rp != nil {
		b = appendBytes(b, listdb.EncodeSubscription(&rp.Sub))
		b = binary.AppendVarint(b, rp.Now)
		b = appendPubs(b, rp.Pubs)
	}
	return appendSubs(appendPubs(b, r.Pubs), r.Prior)
}

// appendSubs writes a list of subscriptions in the store's encoding.
func appendSubs(b []byte, subs []subscriptions.Subscription) []byte {
	if subs == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(subs))+1)
	for i := range subs {
		b = appendBytes(b, listdb.EncodeSubscription(&subs[i]))
	}
	return b
}

// subs reads a list of subscriptions unless an earlier step failed.
func (w *wireReader) subs(err error) ([]subscriptions.Subscription, error) {
	n, ok := w.list()
	if err != nil || !ok {
		return nil, err
	}
	out := make([]subscriptions.Subscription, n)
	for i := range out {
		if out[i], err = listdb.DecodeSubscription(w.bytes()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func appendPubs(b []byte, pubs []subscriptions.Publication) []byte {
	if pubs == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(pubs))+1)
	return appendRecords(b, pubs)
}

func appendRecords(b []byte, pubs []subscriptions.Publication) []byte {
	for i := range pubs {
		b = listdb.AppendSizedPublication(b, &pubs[i])
	}
	return b
}

// decodeReply reads what encodeReply wrote, resolving references with
// kept (what this node keeps); a damaged reply is an error matching
// errBadReply, never a panic, and one naming a past result the node does
// not keep matches errLostRef.
func decodeReply(data []byte, kept *keptRefs) (*reply, error) {
	w := wireReader{b: data}
	if f := w.byte(); f != replyFormat {
		return nil, fmt.Errorf("%w: format %d (the nodes of a cluster must run one release)", errBadReply, f)
	}
	flags := w.byte()
	r := &reply{}
	var lost error // a past result not kept here
	if flags&hasErr != 0 {
		r.Err = &wireError{Kind: w.str(), Msg: w.str(), Retry: time.Duration(w.varint())}
	}
	r.Sid, r.Node = w.str(), w.str()
	r.Match, r.N = w.count(), w.count()
	var err error
	if flags&hasSubR != 0 {
		s := &subscriptions.SubscribeResult{Stored: flags&subStored != 0}
		s.Sub, err = decodeSub(w.bytes(), err)
		var e error
		s.Past, s.Rendered, e = w.past(kept, time.Now().UnixNano(), err)
		if errors.Is(e, errLostRef) {
			lost = e // the rest reads on
		} else {
			err = e
		}
		r.SubR = s
	}
	if flags&hasPubR != 0 {
		p := &subscriptions.PublishResult{Stored: flags&pubStored != 0}
		p.Pub, err = decodePub(w.bytes(), err)
		p.Recent, err = w.pubs(err)
		r.PubR = p
	}
	if flags&hasRep != 0 {
		rp := &subscriptions.ReplayResult{}
		rp.Sub, err = decodeSub(w.bytes(), err)
		rp.Now = w.varint()
		rp.Pubs, err = w.pubs(err)
		r.Rep = rp
	}
	r.Pubs, err = w.pubs(err)
	r.Prior, err = w.subs(err)
	r.More = flags&moreFollow != 0
	switch {
	case w.bad:
		return nil, fmt.Errorf("%w: cut short", errBadReply)
	case len(w.b) > 0:
		return nil, fmt.Errorf("%w: %d bytes left over", errBadReply, len(w.b))
	case err != nil:
		return nil, fmt.Errorf("%w: %w", errBadReply, err)
	case lost != nil:
		return nil, lost
	}
	return r, nil
}

// decodeSub and decodePub read a record unless an earlier step failed.
func decodeSub(rec []byte, err error) (subscriptions.Subscription, error) {
	if err != nil {
		return subscriptions.Subscription{}, err
	}
	return listdb.DecodeSubscription(rec)
}

func decodePub(rec []byte, err error) (subscriptions.Publication, error) {
	if err != nil {
		return subscriptions.Publication{}, err
	}
	return listdb.DecodePublication(rec)
}

// past reads a subscribe's past results (refs.go) unless an earlier
// step failed: records, or renderings. now is this node's clock.
func (w *wireReader) past(kept *keptRefs, now int64, err error) ([]subscriptions.Publication, [][]byte, error) {
	n, ok := w.list()
	if err != nil || !ok {
		return nil, nil, err
	}
	switch w.byte() {
	case pastRecords:
		pubs, err := w.records(n)
		return pubs, nil, err
	case pastRefs:
		rendered, err := kept.read(w, n, now)
		return nil, rendered, err
	}
	w.bad, w.b = true, nil
	return nil, nil, nil
}

// pubs reads a list of publications unless an earlier step failed.
func (w *wireReader) pubs(err error) ([]subscriptions.Publication, error) {
	n, ok := w.list()
	if err != nil || !ok {
		return nil, err
	}
	return w.records(n)
}

// records reads n publications.
func (w *wireReader) records(n int) ([]subscriptions.Publication, error) {
	var err error
	pubs := make([]subscriptions.Publication, n)
	for i := range pubs {
		if pubs[i], err = listdb.DecodePublication(w.bytes()); err != nil {
			return nil, err
		}
	}
	return pubs, nil
}
