package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/seed84792017/cellcast/protocol"
)

// wireRequest is a request as sent; empty fields are left out.
type wireRequest struct {
	ID       string            `json:"id"`
	Op       string            `json:"op"`
	UID      string            `json:"uid,omitempty"`
	Cell     string            `json:"cell,omitempty"`
	Lat      *float64          `json:"lat,omitempty"`
	Lng      *float64          `json:"lng,omitempty"`
	RadiusM  *float64          `json:"radius_m,omitempty"`
	Polygon  *geoJSON          `json:"polygon,omitempty"` // a pointer: fxamacker/cbor omits no empty Marshaler
	Cover    int               `json:"cover,omitempty"`
	Near     *wireNear         `json:"near,omitempty"`
	Within   *geoJSON          `json:"within,omitempty"`
	Topic    string            `json:"topic,omitempty"`
	Past     string            `json:"past,omitempty"`
	Future   string            `json:"future,omitempty"`
	Expires  string            `json:"expires,omitempty"`
	SelfJoin bool              `json:"self_join,omitempty"`
	Filter   *wireFilter       `json:"filter,omitempty"`
	Desc     string            `json:"desc,omitempty"`
	Attrs    map[string]string `json:"attrs,omitempty"`
	Sid      string            `json:"sid,omitempty"`
	After    *int64            `json:"after,omitempty"`
	Attr     string            `json:"attr,omitempty"`
	Eq       *string           `json:"eq,omitempty"`
	From     *string           `json:"from,omitempty"`
	To       *string           `json:"to,omitempty"`
	K        int               `json:"k,omitempty"`
	Cursor   string            `json:"cursor,omitempty"`
}

type wireFilter struct {
	Keyword string            `json:"keyword,omitempty"`
	Attrs   map[string]string `json:"attrs,omitempty"`
}

// wireNear is a query's circle (or point).
type wireNear struct {
	Lat     float64  `json:"lat"`
	Lng     float64  `json:"lng"`
	RadiusM *float64 `json:"radius_m,omitempty"`
}

// locate sets a subscribe's or a publish's location.
func (r *wireRequest) locate(l Location) error {
	if l.err != nil {
		return l.err
	}
	r.Cell, r.Lat, r.Lng, r.RadiusM, r.Topic, r.Cover = l.cell, l.lat, l.lng, l.radiusM, l.topic, l.cover
	if l.polygon != nil {
		r.Polygon = &l.polygon
	}
	return nil
}

// place sets a query's place: near for a point or a circle, within for a
// polygon.
func (r *wireRequest) place(l Location) error {
	switch {
	case l.err != nil:
		return l.err
	case l.polygon != nil:
		r.Within = &l.polygon
	case l.lat != nil && l.lng != nil && l.cell == "" && l.topic == "":
		r.Near = &wireNear{Lat: *l.lat, Lng: *l.lng, RadiusM: l.radiusM}
	default:
		return fmt.Errorf("%w: a query by place takes a Point, a Circle or a Polygon", ErrBadLocation)
	}
	r.Cover = l.cover
	return nil
}

// duration renders a window or a lifetime: 0 is left out, which the
// broker takes as none. A negative one is refused, not sent: leaving it
// out would turn a mistake into "none" (a publication that reaches live
// subscribers and is never stored).
func duration(field string, d time.Duration) (string, error) {
	switch {
	case d < 0:
		return "", fmt.Errorf("%w: %s %v is negative", ErrInvalidRequest, field, d)
	case d == 0:
		return "", nil
	}
	return d.String(), nil
}

// wireReply is any frame but a notification.
type wireReply struct {
	ID           string            `json:"id"`
	Op           string            `json:"op"`
	Code         string            `json:"code"`
	Message      string            `json:"message"`
	Limit        string            `json:"limit"`
	RetryAfterMs int64             `json:"retry_after_ms"`
	Sid          string            `json:"sid"`
	Pid          string            `json:"pid"`
	Cell         string            `json:"cell"`
	Cover        []string          `json:"cover"`
	Ts           string            `json:"ts"`
	Tp           string            `json:"tp"`
	ExpiresAt    string            `json:"expires_at"`
	Live         bool              `json:"live"`
	Matched      int               `json:"matched"`
	Replayed     int               `json:"replayed"`
	Attr         string            `json:"attr"`
	Place        string            `json:"place"`
	Count        int               `json:"count"`
	More         bool              `json:"more"`
	Next         string            `json:"next"`
	Reason       string            `json:"reason"`
	Last         int64             `json:"last"`
	Results      []json.RawMessage `json:"results"`
	Recent       []json.RawMessage `json:"recent"`
	// pubs is the reply's list (results, or a publish's recent) decoded,
	// every page's joined.
	pubs []Publication
}

// Lists come last in the broker's replies, spliced after the other
// fields (gateway/paging.go).
var (
	resultsKey = []byte("," + quoted(protocol.FieldResults) + "[")
	recentKey  = []byte("," + quoted(protocol.FieldRecent) + "[")
)

// decodeReply reads a reply and decodes its list; err set with a reply
// means its list could not be read. Replies with long lists (past
// results, query results) are a subscriber's other bulk after
// notifications, so the list is read by hand when it is where the broker
// puts it: encoding/json would scan every publication twice.
func decodeReply(data []byte, stamps *stampCache) (rep *wireReply, err error) {
	if rep, ok := decodeReplyFast(data, stamps); ok {
		return rep, nil
	}
	rep = &wireReply{}
	if err := json.Unmarshal(data, rep); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	list := rep.Results
	if rep.Op == protocol.OpPublished {
		list = rep.Recent
	}
	rep.pubs, err = publications(list)
	rep.Results, rep.Recent = nil, nil
	return rep, err
}

// decodeReplyFast reads a reply whose list comes last; false means "not
// that shape".
func decodeReplyFast(data []byte, stamps *stampCache) (*wireReply, bool) {
	for _, key := range [][]byte{resultsKey, recentKey} {
		// A key's bytes cannot occur inside a JSON string (its quotes
		// would be escaped), so the first match is the key itself.
		i := bytes.Index(data, key)
		if i < 0 {
			continue
		}
		// The key's comma must follow a field: "{," is not JSON, "{}" is.
		if h := bytes.TrimRight(data[:i], " \t\r\n"); len(h) == 0 || h[len(h)-1] == '{' {
			return nil, false
		}
		// A list before it, even empty or under a key that differs only in
		// case (encoding/json matches keys so), leaves the reply to json.
		rep := &wireReply{}
		if json.Unmarshal(append(data[:i:i], '}'), rep) != nil || rep.Results != nil || rep.Recent != nil {
			return nil, false
		}
		s := scanner{b: data, i: i + len(key) - 1, stamps: stamps}
		pubs, ok := s.publications()
		if !ok || !s.take('}') || !s.end() {
			return nil, false
		}
		rep.pubs = pubs
		return rep, true
	}
	return nil, false
}

func (r *wireReply) err() error {
	if r.Op != protocol.OpError {
		return nil
	}
	return &Error{Code: r.Code, Message: r.Message, RetryAfter: protocol.RetryAfterOf(r.RetryAfterMs), Limit: r.Limit}
}

// publications decodes a reply's results (or recent) list.
func publications(raw []json.RawMessage) ([]Publication, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	out := make([]Publication, len(raw))
	for i, b := range raw {
		if err := decodePublication(b, &out[i], nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// wirePublication is the slow path of decodePublication.
type wirePublication struct {
	Pid       string            `json:"pid"`
	Uid       string            `json:"uid"`
	Cell      string            `json:"cell"`
	Topic     string            `json:"topic"`
	Tp        string            `json:"tp"`
	ExpiresAt string            `json:"expires_at"`
	Desc      string            `json:"desc"`
	Attrs     map[string]string `json:"attrs"`
	Lat       *float64          `json:"lat"`
	Lng       *float64          `json:"lng"`
	RadiusM   *float64          `json:"radius_m"`
	Polygon   geoJSON           `json:"polygon"`
}

func decodePublicationSlow(b []byte, p *Publication) error {
	var w wirePublication
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("%w: publication: %v", ErrProtocol, err)
	}
	return w.to(p)
}

// to makes w a Publication.
func (w *wirePublication) to(p *Publication) error {
	tp, err1 := parseTime(w.Tp)
	exp, err2 := parseTime(w.ExpiresAt)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("%w: publication times %q, %q", ErrProtocol, w.Tp, w.ExpiresAt)
	}
	*p = Publication{Pid: w.Pid, Uid: w.Uid, Cell: w.Cell, Topic: w.Topic, Tp: tp, ExpiresAt: exp, Desc: w.Desc, Attrs: w.Attrs}
	if w.Lat != nil && w.Lng != nil {
		p.At = &Place{Lat: *w.Lat, Lng: *w.Lng}
		if w.RadiusM != nil {
			p.At.RadiusM = *w.RadiusM
		}
	}
	if w.Polygon != nil {
		p.Polygon = json.RawMessage(w.Polygon)
	}
	return nil
}
