package client

import (
	"bytes"
	"fmt"

	"github.com/seed84792017/cellcast/protocol"
)

// What the reader does with each frame: replies to their calls,
// notifications (single or grouped) to their subscriptions, in order.

// frame handles one frame from tr; one runs at a time.
func (c *Client) frame(tr transport, data []byte) {
	// The broker's renderings first: the fallbacks search the whole frame,
	// and a reply may hold many past results.
	switch {
	case bytes.HasPrefix(data, groupPrefix):
		c.notifyGroup(tr, data)
		return
	case bytes.HasPrefix(data, notePrefix):
		c.notify(tr, data)
		return
	case bytes.HasPrefix(data, replyPrefix):
	case isNotification(data):
		c.notify(tr, data)
		return
	case isGroup(data):
		c.notifyGroup(tr, data)
		return
	}
	rep, err := decodeReply(data, &c.rd.stamps)
	if rep == nil {
		c.opts.Log.Error("cellcast client: unreadable frame", "err", err, "frame", fmt.Sprintf("%.200q", data))
		return
	}
	c.handle(tr, rep, err)
}

// frameCBOR handles one binary frame, as frame does a text one.
func (c *Client) frameCBOR(tr transport, data []byte) {
	if sid, seq, pub, ok := splitNotificationCBOR(data); ok {
		c.route(tr, sid, seq, -1, pub, true)
		return
	}
	if to, pub, ok := splitGroupCBOR(data, c.rd.to[:0]); ok {
		c.routeGroup(tr, to, pub, true)
		clear(to)
		c.rd.to = to[:0]
		return
	}
	f, err := decodeFrameCBOR(data)
	if f == nil {
		c.opts.Log.Error("cellcast client: unreadable frame", "err", err, "frame", fmt.Sprintf("%.200x", data))
		return
	}
	if f.Op == protocol.OpNotifications {
		c.opts.Log.Error("cellcast client: unreadable grouped notification", "frame", fmt.Sprintf("%.200x", data))
		return
	}
	if f.Op == protocol.OpNotification {
		prev := int64(-1)
		if f.Prev != nil {
			prev = *f.Prev
		}
		if f.Sid == "" || len(f.Publication) == 0 || prev < 0 && f.Prev != nil {
			c.opts.Log.Error("cellcast client: unreadable notification", "frame", fmt.Sprintf("%.200x", data))
			return
		}
		c.route(tr, []byte(f.Sid), f.Seq, prev, f.Publication, true)
		return
	}
	c.handle(tr, &f.wireReply, err)
}

// handle takes a frame other than a notification; bad says its list
// could not be read.
func (c *Client) handle(tr transport, rep *wireReply, err error) {
	if rep.Op == protocol.OpEnded {
		c.ended(tr, rep.Sid, rep.Reason, rep.Last)
		return
	}
	c.reply(tr, rep, err)
}

// ended handles the broker's word that a subscription stopped routing
// here. It comes after the subscription's last notification, whose seq
// it names: a client that has not received that one lost the last ones
// on the way (NATS), and resumes to get them.
func (c *Client) ended(tr transport, sid, reason string, last int64) {
	c.mu.Lock()
	s := c.subs[sid]
	c.mu.Unlock()
	if s == nil {
		return // ended here already (unsubscribed, say)
	}
	if reason != protocol.EndMoved && last > s.last.Load() {
		c.stats.gaps.Add(1)
		c.repair(tr, s)
		return
	}
	switch reason {
	case protocol.EndWindow:
		c.end(s, ErrWindowOver)
	case protocol.EndCancelled:
		c.end(s, ErrCancelled)
	case protocol.EndMoved:
		c.end(s, ErrMoved)
	default: // EndBehind, or news to this client: resume while it can
		c.repair(tr, s)
	}
}

// reply files a reply or a page of one, and completes its call once the
// last page is in; bad says its list could not be read.
func (c *Client) reply(tr transport, rep *wireReply, bad error) {
	c.mu.Lock()
	cl := c.pending[rep.ID]
	if cl == nil {
		c.mu.Unlock()
		c.opts.Log.Warn("cellcast client: a reply nobody waits for", "id", rep.ID, "op", rep.Op, "code", rep.Code, "message", rep.Message)
		return
	}
	if rep.Op == protocol.OpPage {
		if cl.rep == nil {
			delete(c.pending, rep.ID)
			c.mu.Unlock()
			cl.fn(nil, fmt.Errorf("%w: a page before its reply", ErrProtocol))
			return
		}
		cl.rep.pubs = append(cl.rep.pubs, rep.pubs...)
		cl.rep.More, cl.rep.Next = rep.More, rep.Next
	} else {
		cl.rep = rep
	}
	if bad != nil {
		cl.bad = bad
	}
	if cl.rep.More {
		next := cl.rep.Next
		c.mu.Unlock()
		if next != "" { // cursor mode: pull the next page, under the same id
			b, _ := encodeRequest(tr, &wireRequest{ID: rep.ID, Op: protocol.OpPage, Cursor: next})
			go tr.send(protocol.OpPage, b)
		}
		return
	}
	delete(c.pending, rep.ID)
	c.mu.Unlock()
	if cl.bad != nil {
		cl.fn(nil, cl.bad)
		return
	}
	cl.fn(cl.rep, nil)
}

// notifyGroup routes a grouped notification to its subscriptions.
func (c *Client) notifyGroup(tr transport, data []byte) {
	to, pub, err := splitGroup(data, c.rd.to[:0])
	if err != nil {
		c.opts.Log.Error("cellcast client: unreadable notification", "err", err)
		return
	}
	c.routeGroup(tr, to, pub, false)
	clear(to) // the sids point into the frame
	c.rd.to = to[:0]
}

// notify routes a notification to its subscription. One the subscription
// already received is dropped; one whose prev shows a notification
// missing before it is dropped too, and the subscription resumed from the
// last one received, which replays the missing one and this one.
func (c *Client) notify(tr transport, data []byte) {
	sid, seq, prev, pub, err := splitNotification(data)
	if err != nil {
		c.opts.Log.Error("cellcast client: unreadable notification", "err", err)
		return
	}
	c.route(tr, sid, seq, prev, pub, false)
}

// route delivers a split notification, its publication in CBOR or JSON.
func (c *Client) route(tr transport, sid []byte, seq, prev int64, pub []byte, isCBOR bool) {
	s := c.accept(tr, sid, seq, prev)
	if s == nil {
		return
	}
	n := Notification{Sid: s.Sid, Seq: seq}
	if !c.decode(pub, &n.Publication, isCBOR, s.Sid, seq) {
		return
	}
	s.last.Store(seq)
	s.deliver(n)
}

// accept returns the subscription a notification is for, or nil when it
// is to be dropped: no such subscription, already received, or (prev
// above the last received) a gap, which it repairs.
func (c *Client) accept(tr transport, sid []byte, seq, prev int64) *Subscription {
	s := c.rd.sub
	if gen := c.subsGen.Load(); s == nil || s.Sid != string(sid) || gen != c.rd.subGen {
		c.mu.Lock()
		s = c.subs[string(sid)]
		c.mu.Unlock()
		c.rd.sub, c.rd.subGen = s, gen
	}
	if !c.takes(tr, s, seq, prev) {
		return nil
	}
	return s
}

// takes reports whether s (nil: none known) takes a notification.
func (c *Client) takes(tr transport, s *Subscription, seq, prev int64) bool {
	if s == nil {
		c.stats.orphans.Add(1)
		return false
	}
	// Only the reader writes last, and one reader runs at a time.
	last := s.last.Load()
	if seq <= last {
		c.stats.duplicates.Add(1)
		return false
	}
	if prev > last {
		c.stats.gaps.Add(1)
		c.repair(tr, s)
		return false
	}
	return true
}

// decode reads a notification's publication, logging one it cannot read.
func (c *Client) decode(pub []byte, p *Publication, isCBOR bool, sid string, seq int64) bool {
	// No function value for the decoder: p would escape to the heap.
	var err error
	switch {
	case isCBOR:
		err = decodePublicationCBOR(pub, p, &c.rd.stamps)
	default:
		err = decodePublication(pub, p, &c.rd.stamps)
	}
	if err != nil {
		c.opts.Log.Error("cellcast client: unreadable publication", "sid", sid, "seq", seq, "err", err)
		return false
	}
	return true
}
