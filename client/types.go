package client

import (
	"time"
)

// Location is where a request applies: a Dewey cell, a point, a circle or
// a topic. Build one with Cell, Point, Circle or Topic.
type Location struct {
	cell     string
	lat, lng *float64
	radiusM  *float64
	topic    string
	cover    int
}

// Cell is a Dewey id such as "1.4.2" ("t1.2" in the topic namespace).
func Cell(id string) Location { return Location{cell: id} }

// Point is the quad tree cell of a point, at the broker's geo depth.
func Point(lat, lng float64) Location { return Location{lat: &lat, lng: &lng} }

// Circle is the smallest cell holding the circle of radiusM metres.
func Circle(lat, lng, radiusM float64) Location {
	return Location{lat: &lat, lng: &lng, radiusM: &radiusM}
}

// Cover puts a circle on at most k cells that cover it (1 to 16) instead
// of the one cell holding it, which for a circle across a cell border is
// a far larger ancestor. The subscription or publication stays one, with
// one id, and each matching pair is still reported once. The broker
// refuses a cover of anything but a Circle.
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
	UID    string
	Past   time.Duration // how far back past results reach
	Future time.Duration // how long notifications follow; 0: past results only
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
	UID      string        // as in SubscribeRequest
	Expires  time.Duration // lifetime; 0: matched now, not stored
	Desc     string
	Attrs    map[string]string
	// SelfJoin asks for the cell's recent publications in the reply.
	SelfJoin bool
}

// QueryRequest asks for the latest K live publications whose attribute
// Attr ("uid", "tp" or an attrs key) equals Eq, or lies in [From, To]
// when either is set.
type QueryRequest struct {
	Attr     string
	Eq       string
	From, To string
	K        int // 1…1000; 0: the broker's default
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
	// nil for one made at a cell or a topic.
	At *Place
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
	Attr         string
	Count        int
	Publications []Publication
}
