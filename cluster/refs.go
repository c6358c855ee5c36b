package cluster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sync"
	"time"

	"github.com/seed84792017/cellcast/subscriptions"
)

// Past results by reference. A subscribe's past results were 89% of the
// bytes between nodes on the moving users (about 100 bytes a record), and
// encoding and decoding them a tenth of the cluster's CPU; yet a holder
// gets most publications many times, in the past results of each of its
// subscribers that finds them. So an owner node numbers the publications
// whose renderings it sends a holder in its replies, and the holder keeps
// them until they expire: the next time, the owner sends the number.
//
// Numbers are never reused within an owner node's life (instance), so a
// number the holder finds always names the right rendering. One it does
// not find (a message lost on a broken route, a holder that restarted, a
// clock far ahead) fails that reply as unavailable, and the holder starts
// a new epoch: it forgets what it kept, and its next request tells each
// owner to forget what it sent. References ride only the owner's stream
// of batches to the holder (outbox), which the holder reads in order, so
// a definition always comes before its first use.
//
//	past    := uvarint(0 for nil, else count+1) [mode]
//	mode    := 'P' record...                      (records: a reply sent alone)
//	         | 'R' instance entry...
//	entry   := uvarint(id<<2 | refKept)
//	         | uvarint(id<<2 | refDefine) varint(tmax) bytes(rendering)
//	         | uvarint(refInline) bytes(rendering)  (not kept: the owner's record is full)
const (
	pastRecords byte = 'P'
	pastRefs    byte = 'R'
)

// Entry kinds of a pastRefs list: the low two bits of an entry's tag.
const (
	refKept   = 0
	refDefine = 1
	refInline = 2
)

// Bounds of what an owner node asks one holder to keep: the holder keeps
// no more (but for what expired within refMargin).
var maxSentRefs = 1 << 16

const (
	maxSentRefBytes = 32 << 20
	// refMargin: a holder keeps a publication this long past its expiry,
	// for the owner's clock running behind its own.
	refMargin = time.Minute
	// refSweep: how often each side drops what expired.
	refSweep = 10 * time.Second
)

// errLostRef: a reply named a publication the holder does not keep.
var errLostRef = errors.New("cluster: a past result the node no longer keeps")

// sentRefs is, on an owner node, what it asked one holder to keep. Its
// outbox's mu guards it, so that it follows the order of the stream.
type sentRefs struct {
	instance uint64 // this node's life
	render   func(*subscriptions.Publication) []byte
	counts   *counters
	epoch    uint64 // the holder's, when sent began
	next     uint64
	// sent names a publication by the lease of its shard (shard and
	// take, reply.Node) and then its stamp: a reply's past results share
	// one lease, and a map by stamp alone takes a fraction of the time
	// of one by both, once a past result each.
	sent  map[string]map[int64]sentRef
	count int // of sent's entries
	bytes int
	swept int64
}

type sentRef struct {
	id   uint64
	tmax int64
	size int
}

// appendPast writes past, the past results of a reply from the shard of
// lease to a holder that asked at epoch, with references to what the
// holder keeps. now is this node's clock.
func (s *sentRefs) appendPast(b []byte, past []subscriptions.Publication, lease string, epoch uint64, now int64) []byte {
	if past == nil {
		return append(b, 0)
	}
	if s.sent == nil || epoch > s.epoch { // the holder forgot: start again
		s.sent, s.count, s.bytes, s.epoch = map[string]map[int64]sentRef{}, 0, 0, epoch
	}
	s.sweep(now)
	b = binary.AppendUvarint(b, uint64(len(past))+1)
	b = append(b, pastRefs)
	b = binary.AppendUvarint(b, s.instance)
	sent := s.sent[lease]
	var refs, rendered uint64
	for i := range past {
		p := &past[i]
		if r, ok := sent[p.Tp]; ok {
			b = binary.AppendUvarint(b, r.id<<2|refKept)
			refs++
			continue
		}
		rendered++
		body := s.render(p)
		if s.count < maxSentRefs && s.bytes+len(body) <= maxSentRefBytes {
			if sent == nil {
				sent = map[int64]sentRef{}
				s.sent[lease] = sent
			}
			s.next++
			sent[p.Tp] = sentRef{id: s.next, tmax: p.Tmax, size: len(body)}
			s.count++
			s.bytes += len(body)
			b = binary.AppendUvarint(b, s.next<<2|refDefine)
			b = binary.AppendVarint(b, p.Tmax)
		} else {
			b = binary.AppendUvarint(b, refInline)
		}
		b = appendBytes(b, body)
	}
	s.counts.pastRefs.Add(refs)
	s.counts.pastRendered.Add(rendered)
	return b
}

// sweep forgets what expired: no reply names it again.
func (s *sentRefs) sweep(now int64) {
	if now-s.swept < int64(refSweep) {
		return
	}
	s.swept = now
	for lease, sent := range s.sent {
		for tp, r := range sent {
			if r.tmax < now {
				delete(sent, tp)
				s.count--
				s.bytes -= r.size
			}
		}
		if len(sent) == 0 {
			delete(s.sent, lease)
		}
	}
}

// appendRendered writes renderings as a pastRefs list of inline entries:
// a reply read from another node, encoded again.
func appendRendered(b []byte, rendered [][]byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(rendered))+1)
	b = append(b, pastRefs, 0) // instance 0: no entry is kept
	for _, x := range rendered {
		b = binary.AppendUvarint(b, refInline)
		b = appendBytes(b, x)
	}
	return b
}

// keptRefs is, on a holder, the renderings owners asked it to keep.
type keptRefs struct {
	mu    sync.Mutex
	epoch uint64
	// m holds them by owner instance, then number: a reply names one
	// instance for all its past results.
	m     map[uint64]map[uint64]kept
	swept int64
}

type kept struct {
	body  []byte
	until int64
}

func newKeptRefs(now int64) *keptRefs {
	return &keptRefs{epoch: uint64(now), m: map[uint64]map[uint64]kept{}}
}

// current is the epoch a request carries.
func (k *keptRefs) current() uint64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.epoch
}

// lost starts a new epoch: the holder forgets what it kept, and owners
// forget what they sent it when its next request reaches them.
func (k *keptRefs) lost(now int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.epoch = max(k.epoch+1, uint64(now))
	clear(k.m)
}

// read reads the n entries of a pastRefs list (after its mode) into
// renderings, keeping what it defines. A kept entry it does not find is
// errLostRef, once the whole list is read (what it defines is kept); a
// damaged list leaves w bad.
func (k *keptRefs) read(w *wireReader, n int, now int64) ([][]byte, error) {
	instance := w.uvarint()
	out := make([][]byte, n)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.sweep(now)
	m := k.m[instance]
	var err error
	for i := range out {
		tag := w.uvarint()
		id := tag >> 2
		switch tag & 3 {
		case refKept:
			e, ok := m[id]
			if !ok && err == nil {
				err = errLostRef
			}
			out[i] = e.body
		case refDefine:
			tmax := w.varint()
			body := bytes.Clone(w.bytes()) // not the message's: it outlives it
			if !w.bad && instance != 0 {
				if m == nil {
					m = map[uint64]kept{}
					k.m[instance] = m
				}
				m[id] = kept{body: body, until: tmax + int64(refMargin)}
			}
			out[i] = body
		case refInline:
			out[i] = w.bytes()
		default:
			w.bad, w.b = true, nil
		}
		if w.bad {
			return nil, nil // decodeReply reports it
		}
	}
	return out, err
}

// sweep drops what expired past the margin. k.mu is held.
func (k *keptRefs) sweep(now int64) {
	if now-k.swept < int64(refSweep) {
		return
	}
	k.swept = now
	for instance, m := range k.m {
		for id, e := range m {
			if e.until < now {
				delete(m, id)
			}
		}
		if len(m) == 0 {
			delete(k.m, instance)
		}
	}
}

// len is how many renderings the holder keeps.
func (k *keptRefs) len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, m := range k.m {
		n += len(m)
	}
	return n
}
