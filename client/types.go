package client

import (
	"bytes"
	"encoding/json"
	"time"
)

// Location is where a request applies: a Dewey cell, a point, a circle, a
// polygon or a topic. Build one with Cell, Point, Circle, Polygon or
// Topic.
type Location struct {
	cell     string
	lat, lng *float64
	radiusM  *float64
	polygon  geoJSON
	topic    string
	cover    int
	err      error // from Polygon: the request is not sent
}

// Cell is a Dewey id such as "1.4.2" ("t1.2" in the topic namespace). On
// the world grid the first component is an S2 face plus one (1–6), each
// further one a child position plus one (1–4).
func Cell(id string) Location { return Location{cell: id} }

// Point is a point anywhere on Earth, indexed at the broker's geo level
// (S2 level 16 by default: cells about 150 m across).
func Point(lat, lng float64) Location { return Location{lat: &lat, lng: &lng} }

// Circle is the circle of radiusM metres (more than 0, at most the
// broker's maximum) around a point: indexed on a cover of cells (see
// Cover), matched by its exact geometry.
func Circle(lat, lng, radiusM float64) Location {
	return Location{lat: &lat, lng: &lng, radiusM: &radiusM}
}

// Polygon is a GeoJSON geometry (RFC 7946) of type Polygon or
// MultiPolygon: positions are [lng, lat], rings closed, edges great-circle
// arcs. Like a circle it is indexed on a cover of cells and matched by its
// exact geometry. The client only checks that geojson is a JSON object
// (a request with anything else fails with ErrBadLocation, unsent); the
// broker checks the geometry and answers a bad one with bad_request.
func Polygon(geojson []byte) Location {
	if err := checkGeoJSON(geojson); err != nil {
		return Location{err: err}
	}
	return Location{polygon: bytes.Clone(geojson)}
}

// Cover puts a circle or a polygon on at most k cells that cover it (1 to
// 16) instead of the broker's default number (4): fewer cells cost less
// to store, more fit the shape closer and so bring fewer candidates that
// its geometry then turns away. Either way the subscription or
// publication stays one, with one id, and each matching pair is reported
// once. The broker refuses a cover of a Point, a Cell or a Topic.
func (l Location) Cover(k int) Location {
	l.cover = k
	return l
}

// Topic is a topic path such as "sports/soccer".
func Topic(path string) Location { return Location{topic: path} }

// Filter narrows a subscription: a keyword in the description
// (case-insensitive) and attributes that must be equal.
type Filter struct {
	Keyword string
	Attrs   map[string]string
}

// SubscribeRequest is a subscription's location, window and options.
type SubscribeRequest struct {
	Location Location
	// UID acts as another user than Options.UID, on a broker in open
	// mode: one connection may carry many users' subscriptions.
	UID string
	// Past is how far back past results reach; 0: none. Future is how
	// long notifications follow; 0: past results only. Negative ones are
	// refused with ErrInvalidRequest.
	Past, Future time.Duration
	// SelfJoin leaves out publications this user's earlier subscriptions
	// already returned.
	SelfJoin bool
	Filter   *Filter
	// Handler, if set, receives the notifications instead of C, on a
	// goroutine of the subscription's own, so it may call the client.
	Handler func(Notification)
	// Inline runs Handler on the connection's reader instead: the cheapest
	// path, for handlers that only record. Such a handler must neither
	// block nor wait for a reply of this client.
	Inline bool
}

// PublishRequest is a publication.
type PublishRequest struct {
	Location Location
	UID      string // as in SubscribeRequest
	// Expires is the lifetime. 0: the live subscriptions are notified
	// and nothing is stored. Negative is refused with ErrInvalidRequest.
	Expires time.Duration
	Desc    string
	Attrs   map[string]string
	// SelfJoin asks for the cell's recent publications in the reply.
	SelfJoin bool
}

// QueryRequest asks for the latest K live publications whose attribute
// Attr ("uid", "tp" or an attrs key) equals Eq, or lies in [From, To]
// when those are set: both, or neither (one alone is refused with
// ErrInvalidRequest).
type QueryRequest struct {
	Attr     string
	Eq       string
	From, To string
	K        int // 1…1000; 0: the broker's default
}

// PlaceQuery asks for the latest K live publications whose place meets
// Place, newest first: cells find the candidates, exact geometry decides
// (a publication made at a cell meets the place when its cell's region
// does; one made at a topic never does).
type PlaceQuery struct {
	// Place is a Circle or a Polygon (with Cover if wanted), or a Point
	// (the publications whose place holds it).
	Place Location
	// From and To bound the publications' stamps (Tp); zero: unbounded.
	From, To time.Time
	// Attr and Eq, together, keep the publications whose attribute Attr
	// equals Eq; Attr "uid" means the publisher.
	Attr, Eq string
	Filter   *Filter
	K        int // 1…1000; 0: the broker's default (10)
}

// Publication is a stored publication as the broker renders it.
type Publication struct {
	Pid       string
	Uid       string
	Cell      string
	Topic     string // topic path, for topic cells
	Tp        time.Time
	ExpiresAt time.Time
	Desc      string
	Attrs     map[string]string
	// At is where a publication made at a point or a circle happened;
	// nil for one made at a cell, a topic or a polygon.
	At *Place
	// Polygon is the GeoJSON geometry (Polygon or MultiPolygon) of a
	// publication made at a polygon, as JSON text whichever the wire
	// encoding; nil for any other.
	Polygon json.RawMessage
}

// Place is where a publication happened: a point, with a radius for a
// circle (0 for a point).
type Place struct {
	Lat, Lng, RadiusM float64
}

// Notification is a publication pushed to a subscription. Seq rises
// strictly within a subscription and resumes from where it was after a
// restart.
type Notification struct {
	Sid         string
	Seq         int64
	Publication Publication
}

// Published is the reply to a publish.
type Published struct {
	Pid       string
	Cell      string
	Cover     []string // every cell, for a cover of more than one (Cell is the first)
	Tp        time.Time
	ExpiresAt time.Time
	Matched   int           // live subscriptions matched
	Recent    []Publication // with SelfJoin: the cell's other live publications
}

// Results is the reply to a query, newest first.
type Results struct {
	Attr         string // the attribute of a Query
	Place        string // "near" (a point or a circle) or "within" (a polygon), of a QueryPlace
	Count        int
	Publications []Publication
}
