package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/seed84792017/cellcast/delivery"
	"github.com/seed84792017/cellcast/geo"
	"github.com/seed84792017/cellcast/protocol"
	"github.com/seed84792017/cellcast/service"
	"github.com/seed84792017/cellcast/subscriptions"
)

// Error codes of error replies: the protocol's, where each is explained.
const (
	CodeBadRequest   = protocol.CodeBadRequest
	CodeUnauthorized = protocol.CodeUnauthorized
	CodeForbidden    = protocol.CodeForbidden
	CodeNotFound     = protocol.CodeNotFound
	CodeOverloaded   = protocol.CodeOverloaded
	CodeTooLarge     = protocol.CodeTooLarge
	CodeTooMany      = protocol.CodeTooMany
	CodeUnavailable  = protocol.CodeUnavailable
	CodeInternal     = protocol.CodeInternal
	CodeUnknownOp    = protocol.CodeUnknownOp
)

// Error is an error reply, the one the Go client reads back.
type Error = protocol.Error

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// CodeOf is the error reply to an operation that failed with err. A
// cluster carries these errors' classes between nodes (cluster's toWire),
// and its tests hold it to giving a client the same reply from any node.
func CodeOf(err error) *Error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, new(*delivery.OverloadedError)):
		var oe *delivery.OverloadedError
		errors.As(err, &oe)
		return &Error{Code: CodeOverloaded, Message: "delivery is behind: " + userMessage(oe), RetryAfter: oe.RetryAfter}
	case errors.Is(err, delivery.ErrForbidden):
		return &Error{Code: CodeForbidden, Message: userMessage(err)}
	case errors.Is(err, subscriptions.ErrUnknownSid):
		return &Error{Code: CodeNotFound, Message: userMessage(err)}
	case errors.Is(err, subscriptions.ErrBadRequest), errors.Is(err, service.ErrBadQuery), errors.Is(err, service.ErrNoCatalog):
		return &Error{Code: CodeBadRequest, Message: userMessage(err)}
	case errors.Is(err, errClosing):
		return &Error{Code: CodeUnavailable, Message: "the broker is shutting down"}
	case errors.Is(err, service.ErrUnavailable):
		return &Error{Code: CodeUnavailable, Message: userMessage(err)}
	}
	return &Error{Code: CodeInternal, Message: "storage failure; try again"}
}

var errClosing = errors.New("gateway closing")

// Request is a client request, on either transport. Unknown fields are
// refused, so a misspelt option does not pass silently.
type Request struct {
	ID      json.RawMessage `json:"id"`
	Op      string          `json:"op"`
	UID     string          `json:"uid"`
	Token   string          `json:"token"`
	Cell    *string         `json:"cell"`
	Lat     *float64        `json:"lat"`
	Lng     *float64        `json:"lng"`
	RadiusM *float64        `json:"radius_m"`
	// Polygon: a GeoJSON Polygon or MultiPolygon geometry.
	Polygon json.RawMessage `json:"polygon"`
	// Cover: put a circle or a polygon on at most this many cells that
	// cover it (1…the broker's maximum; default the broker's).
	Cover *int `json:"cover"`
	// Near and Within: a query by place, a circle or a polygon.
	Near    *NearJSON       `json:"near"`
	Within  json.RawMessage `json:"within"`
	Topic   *string         `json:"topic"`
	Past    *Duration       `json:"past"`
	Future  *Duration       `json:"future"`
	Expires *Duration       `json:"expires"`
	// SelfJoin: on subscribe, leave out what this user's earlier
	// subscriptions already returned; on publish, reply with the cell's
	// recent publications too.
	SelfJoin bool              `json:"self_join"`
	Filter   *Filter           `json:"filter"`
	Desc     string            `json:"desc"`
	Attrs    map[string]string `json:"attrs"`
	Sid      string            `json:"sid"`
	After    *int64            `json:"after"`
	// Query: the attribute, and either eq or from and to, and k.
	Attr string  `json:"attr"`
	Eq   *string `json:"eq"`
	From *string `json:"from"`
	To   *string `json:"to"`
	K    *int    `json:"k"`
	// Paging: push or cursor, how the pages of a paged reply after the
	// first arrive (paging.go); Cursor: the page op's cursor.
	Paging string `json:"paging"`
	Cursor string `json:"cursor"`
	// stamped, set by the WebSocket pipeline, hears that the request has
	// its place (subscriptions.Stamped): the connection's next may start.
	stamped subscriptions.Stamped
}

// decodeRequest parses one request. A request whose id could be read gets
// it back even when the rest is wrong.
func decodeRequest(data []byte) (*Request, *Error) {
	req, ok := decodeFlat(data)
	if !ok {
		var e *Error
		if req, e = decodeRequestStd(data); e != nil {
			return req, e
		}
	}
	if !validID(req.ID) {
		req.ID = nil
		return req, errorf(CodeBadRequest, "id must be a string or a number")
	}
	if isNull(req.Polygon) {
		req.Polygon = nil // as if absent, like the other fields' nulls
	}
	if isNull(req.Within) {
		req.Within = nil
	}
	if req.Paging != "" && req.Paging != pagingPush && req.Paging != pagingCursor {
		return req, errorf(CodeBadRequest, "paging %q: push or cursor", req.Paging)
	}
	return req, nil
}

// decodeRequestStd is decodeRequest's decoding by encoding/json, for
// every request decodeFlat leaves to it.
func decodeRequestStd(data []byte) (*Request, *Error) {
	req := &Request{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(req)
	if err == nil && dec.More() {
		err = errors.New("data after the request object")
	}
	if err != nil {
		var probe struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(data, &probe) == nil && validID(probe.ID) {
			req.ID = probe.ID
		} else {
			req.ID = nil
		}
		return req, errorf(CodeBadRequest, "malformed request: %v", err)
	}
	return req, nil
}

func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return true
	}
	switch id[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return len(id) <= 256
	}
	return false
}

// Duration is a window or expiry: a Go duration string ("10s", "1m30s")
// or a number of seconds.
type Duration time.Duration

func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if plain := len(b) >= 2 && b[len(b)-1] == '"' && bytes.IndexByte(b[1:len(b)-1], '\\') < 0; plain {
			// No escapes: the string is its bytes (the decoder checked
			// it is a JSON string). encoding/json again for it cost 4% of
			// the broker's CPU under a publication-heavy load.
			s = string(b[1 : len(b)-1])
		} else if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: use Go syntax such as \"10s\" or \"1m30s\"", s)
		}
		*d = Duration(v)
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return fmt.Errorf("duration must be a string such as \"10s\" or a number of seconds")
	}
	if math.IsNaN(secs) || math.Abs(secs) > float64(math.MaxInt64)/1e9 {
		return fmt.Errorf("duration %v seconds out of range", secs)
	}
	*d = Duration(secs * 1e9)
	return nil
}

func (d *Duration) get() time.Duration {
	if d == nil {
		return 0
	}
	return time.Duration(*d)
}

// Filter narrows a subscription: a keyword in the description
// (case-insensitive) and attributes that must be equal. A bare string is a
// keyword.
type Filter struct {
	Keyword string            `json:"keyword"`
	Attrs   map[string]string `json:"attrs"`
}

func (f *Filter) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &f.Keyword)
	}
	type plain Filter
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode((*plain)(f))
}

// Reply bodies. Times are RFC 3339 with nanoseconds: exact, and safe in
// JavaScript, which cannot hold a nanosecond stamp in a number.
type pubJSON struct {
	Pid       string            `json:"pid"`
	Uid       string            `json:"uid"`
	Cell      string            `json:"cell"`
	Topic     string            `json:"topic,omitempty"`
	Tp        string            `json:"tp"`
	ExpiresAt string            `json:"expires_at"`
	Desc      string            `json:"desc,omitempty"`
	Attrs     map[string]string `json:"attrs,omitempty"`
	// Where it was published: a point or a circle's centre and radius,
	// or a polygon as GeoJSON.
	Lat     *float64        `json:"lat,omitempty"`
	Lng     *float64        `json:"lng,omitempty"`
	RadiusM *float64        `json:"radius_m,omitempty"`
	Polygon json.RawMessage `json:"polygon,omitempty"`
}

// FormatTime renders a broker stamp.
func FormatTime(t int64) string { return time.Unix(0, t).UTC().Format(time.RFC3339Nano) }

func (l *Locator) pubJSON(p *subscriptions.Publication) pubJSON {
	j := pubJSON{Pid: p.Pid(), Uid: p.Uid, Cell: p.Cell.String(), Tp: FormatTime(p.Tp),
		ExpiresAt: FormatTime(p.Tmax), Desc: p.Desc, Attrs: p.Attrs}
	if sh := p.Shape; sh != nil && sh.Kind() == geo.Circle {
		lat, lng, r := sh.Circle()
		j.Lat, j.Lng = &lat, &lng
		if r > 0 {
			j.RadiusM = &r
		}
	} else if sh != nil {
		j.Polygon = sh.AppendGeoJSON(nil)
	}
	if p.Cell.NS == subscriptions.NSTopic && l.topics != nil {
		j.Topic, _ = l.topics.Path(p.Cell.ID)
	}
	return j
}

// EncodePublication renders p as the JSON object clients receive.
func (l *Locator) EncodePublication(p *subscriptions.Publication) []byte {
	if l.cache == nil {
		return l.renderPublication(p)
	}
	return l.cache.get(p, func() []byte { return l.renderPublication(p) })
}

// EncodePublications renders ps as EncodePublication renders each.
func (l *Locator) EncodePublications(ps []subscriptions.Publication) [][]byte {
	out := make([][]byte, len(ps))
	if l.cache == nil {
		for i := range ps {
			out[i] = l.renderPublication(&ps[i])
		}
		return out
	}
	l.cache.getAll(ps, out, l.renderPublication)
	return out
}

func (l *Locator) renderPublication(p *subscriptions.Publication) []byte {
	j := l.pubJSON(p)
	n := 96 + len(j.Pid) + len(j.Uid) + len(j.Cell) + len(j.Topic) + len(j.Tp) + len(j.ExpiresAt) + len(j.Desc)
	for k, v := range j.Attrs {
		n += 6 + len(k) + len(v)
	}
	if b, ok := appendPubJSON(make([]byte, 0, n), &j); ok {
		return b
	}
	b, _ := json.Marshal(j)
	return b
}

// EncodePublicationCBOR renders p as the CBOR object cellcast.cbor
// clients receive: its JSON's value (cbor.go).
func (l *Locator) EncodePublicationCBOR(p *subscriptions.Publication) []byte {
	render := func() []byte {
		b, err := appendCBOR(nil, l.EncodePublication(p))
		if err != nil {
			panic(err) // encoding/json's output is always JSON
		}
		return b
	}
	if l.cborCache == nil {
		return render()
	}
	return l.cborCache.get(p, render)
}

// Notification frames are rendered around the publication's shared body:
// prefix, sid, middle, seq, publicationKey, body, suffix. Sids hold only
// [0-9a-z.t-], so they need no escaping.
const (
	notePrefix = protocol.NotePrefix
	noteMiddle = protocol.NoteSeq
	notePrev   = protocol.NotePrev
	noteKey    = protocol.NotePublication
	noteSuffix = protocol.NoteSuffix
)

// appendNotification renders a notification onto b.
func appendNotification(b []byte, sid string, seq int64, body []byte) []byte {
	b = append(b, notePrefix...)
	b = append(b, sid...)
	b = append(b, noteMiddle...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, noteKey...)
	b = append(b, body...)
	return append(b, noteSuffix...)
}

// notificationFrame renders a notification for NATS, which may drop
// messages: it carries prev, the seq of the notification sent before it,
// so a subscriber can see a gap and resume from it. (A WebSocket delivers
// in order or drops the connection, which is gap enough.)
func notificationFrame(n *delivery.Notification) []byte {
	b := make([]byte, 0, len(n.Body)+len(n.Sid)+96)
	b = append(b, notePrefix...)
	b = append(b, n.Sid...)
	b = append(b, noteMiddle...)
	b = strconv.AppendInt(b, n.Seq, 10)
	b = append(b, notePrev...)
	b = strconv.AppendInt(b, n.Prev, 10)
	b = append(b, noteKey...)
	b = append(b, n.Body...)
	return append(b, noteSuffix...)
}

type subscribedReply struct {
	ID        json.RawMessage `json:"id,omitempty"`
	Op        string          `json:"op"`
	Sid       string          `json:"sid"`
	Cell      string          `json:"cell"`
	Cover     []string        `json:"cover,omitempty"` // every cell, when more than one
	Ts        string          `json:"ts"`
	ExpiresAt string          `json:"expires_at"`
	Live      bool            `json:"live"` // false: no future window, nothing will follow
	// Results are spliced in by replyPaged: encoding/json would re-scan
	// a RawMessage of cached bodies, which cost more than encoding them.
}

type publishedReply struct {
	ID        json.RawMessage `json:"id,omitempty"`
	Op        string          `json:"op"`
	Pid       string          `json:"pid"`
	Cell      string          `json:"cell"`
	Cover     []string        `json:"cover,omitempty"` // every cell, when more than one
	Tp        string          `json:"tp"`
	ExpiresAt string          `json:"expires_at"`
	Matched   int             `json:"matched"`
	// Recent, of a self-join publish, is spliced in by replyPaged.
}

type resultsReply struct {
	ID    json.RawMessage `json:"id,omitempty"`
	Op    string          `json:"op"`
	Attr  string          `json:"attr,omitempty"`
	Place string          `json:"place,omitempty"` // near or within, for a query by place
	Count int             `json:"count"`
	// Results are spliced in by replyPaged, as for subscribedReply.
}

type simpleReply struct {
	ID       json.RawMessage `json:"id,omitempty"`
	Op       string          `json:"op"`
	Sid      string          `json:"sid,omitempty"`
	Replayed *int            `json:"replayed,omitempty"`
}

type errorReply struct {
	ID           json.RawMessage `json:"id,omitempty"`
	Op           string          `json:"op"`
	Code         string          `json:"code"`
	Message      string          `json:"message"`
	Limit        string          `json:"limit,omitempty"`
	RetryAfterMs int64           `json:"retry_after_ms,omitempty"`
}

func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Only our own reply types reach here; they always marshal.
		panic(err)
	}
	return b
}

func errorFrame(id json.RawMessage, e *Error) []byte {
	return encode(errorReply{ID: id, Op: protocol.OpError, Code: e.Code, Message: e.Message, Limit: e.Limit, RetryAfterMs: e.RetryAfterMs()})
}

// SubjectSafe reports whether uid can be a NATS subject token.
func SubjectSafe(uid string) bool {
	return uid != "" && !strings.ContainsAny(uid, ".*> \t\r\n")
}
