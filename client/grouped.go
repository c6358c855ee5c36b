package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/url"

	"github.com/seed84792017/cellcast/protocol"
)

// A WebSocket client asks for grouped notifications (unless
// Options.SeparateNotifications): the broker then sends the notifications
// of one publication to several subscriptions of the connection in one
// frame, the publication once, and the client decodes it once.

// recipient is one subscription a grouped frame names.
type recipient struct {
	sid []byte
	seq int64
}

var (
	groupPrefix = []byte(protocol.GroupPrefix)
	groupSid    = []byte(protocol.GroupSid)
	groupPub    = []byte(protocol.GroupPublication)

	cborGroupPrefix = []byte(protocol.CBORGroupPrefix)
)

// groupedURL adds the handshake parameter that asks for grouped
// notifications to a WebSocket URL.
func groupedURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("cellcast: URL %q: %w", raw, err)
	}
	q := u.Query()
	q.Set(protocol.ParamNotifications, protocol.NotificationsGrouped)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// plain reports whether a JSON string's bytes are its value: printable
// ASCII without escapes, as the broker's sids are. Anything else goes to
// encoding/json, which unescapes and replaces invalid UTF-8.
func plain(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e || c == '\\' {
			return false
		}
	}
	return true
}

// isGroup reports whether a text frame is a grouped notification.
func isGroup(b []byte) bool { return hasOp(b, groupPrefix, protocol.OpNotifications) }

// splitGroup returns a grouped frame's recipients and publication,
// appending the recipients to to.
func splitGroup(b []byte, to []recipient) ([]recipient, []byte, error) {
	if rest, ok := bytes.CutPrefix(b, groupPrefix); ok {
		start := len(to)
		for {
			if rest, ok = bytes.CutPrefix(rest, groupSid); !ok {
				break
			}
			i := bytes.IndexByte(rest, '"')
			if i <= 0 || !bytes.HasPrefix(rest[i:], noteSeq) || !plain(rest[:i]) {
				break
			}
			r := recipient{sid: rest[:i]}
			if r.seq, rest, ok = number(rest[i+len(noteSeq):]); !ok {
				break
			}
			if rest, ok = bytes.CutPrefix(rest, []byte("}")); !ok {
				break
			}
			to = append(to, r)
			if after, more := bytes.CutPrefix(rest, []byte(",")); more {
				rest = after
				continue
			}
			if bytes.HasPrefix(rest, groupPub) && bytes.HasSuffix(rest, []byte("}")) {
				return to, rest[len(groupPub) : len(rest)-1], nil
			}
			break
		}
		to = to[:start] // not the broker's rendering: encoding/json reads it
	}
	var w struct {
		To []struct {
			Sid string `json:"sid"`
			Seq int64  `json:"seq"`
		} `json:"to"`
		Publication json.RawMessage `json:"publication"`
	}
	if err := json.Unmarshal(b, &w); err != nil || len(w.To) == 0 || len(w.Publication) == 0 {
		return to, nil, fmt.Errorf("%w: grouped notification %.100q", ErrProtocol, b)
	}
	for _, r := range w.To {
		if r.Sid == "" {
			return to, nil, fmt.Errorf("%w: grouped notification without a sid %.100q", ErrProtocol, b)
		}
		to = append(to, recipient{sid: []byte(r.Sid), seq: r.Seq})
	}
	return to, w.Publication, nil
}

// splitGroupCBOR is splitGroup for a binary frame; ok is false when the
// frame is not a grouped notification of the broker's shape.
func splitGroupCBOR(b []byte, to []recipient) ([]recipient, []byte, bool) {
	rest, ok := bytes.CutPrefix(b, cborGroupPrefix)
	if !ok {
		return to, nil, false
	}
	r := cborReader{b: rest}
	major, n, ok := r.head()
	if !ok || major != 4 || n == 0 || n > uint64(len(rest)) {
		return to, nil, false
	}
	start := len(to)
	for range n {
		major, m, ok := r.head()
		if !ok || major != 5 || m != 2 || !r.key(protocol.FieldSid) {
			return to[:start], nil, false
		}
		i, j, ok := r.text()
		if !ok || i == j || !r.key(protocol.FieldSeq) {
			return to[:start], nil, false
		}
		major, seq, ok := r.head()
		if !ok || major != 0 || seq > math.MaxInt64 {
			return to[:start], nil, false
		}
		to = append(to, recipient{sid: rest[i:j], seq: int64(seq)})
	}
	if !r.key(protocol.FieldPublication) {
		return to[:start], nil, false
	}
	return to, rest[r.i:], true
}

// routeGroup delivers a grouped notification. The publication is decoded
// once; every recipient but the last gets its own copy of the attributes
// and the place (point, circle or polygon), so a handler that changes
// them changes only its own.
func (c *Client) routeGroup(tr transport, to []recipient, pub []byte, isCBOR bool) {
	subs := c.rd.subs[:0]
	c.mu.Lock()
	for _, r := range to {
		subs = append(subs, c.subs[string(r.sid)])
	}
	c.mu.Unlock()
	defer func() {
		clear(subs)
		c.rd.subs = subs[:0]
	}()
	var p Publication
	decoded := false
	for i, r := range to {
		s := subs[i]
		if !c.takes(tr, s, r.seq, -1) {
			continue
		}
		if !decoded {
			if !c.decode(pub, &p, isCBOR, s.Sid, r.seq) {
				return
			}
			decoded = true
		}
		n := Notification{Sid: s.Sid, Seq: r.seq, Publication: p}
		if i < len(to)-1 {
			n.Publication.Attrs = maps.Clone(p.Attrs)
			if p.At != nil {
				at := *p.At
				n.Publication.At = &at
			}
			n.Publication.Polygon = bytes.Clone(p.Polygon)
		}
		s.last.Store(r.seq)
		s.deliver(n)
	}
}
