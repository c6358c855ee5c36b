package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/geo"
	"github.com/seed84792017/cellcast/subscriptions"
)

// Locator maps a request's location onto cells of the world grid (and a
// shape, for a point, a circle or a polygon) or onto a topic, and renders
// publications back for clients (each once, in a cache bounded in
// entries and bytes). The core service takes its EncodePublication to
// render a publication once for all its notifications.
type Locator struct {
	grid   Grid
	topics *dewey.Topics // nil: no topics
	cache  *pubCache     // nil: none
	// cborCache holds the CBOR of publications sent to cellcast.cbor
	// clients (cbor.go).
	cborCache *pubCache
}

// Grid says how places become cells.
type Grid struct {
	// Level is the S2 level a bare point is indexed at, and the deepest
	// a cover goes (default geo.DefaultLevel: cells about 150 m across).
	Level int
	// Cover is how many cells a circle or a polygon goes to when its
	// request does not say (default DefaultCover); MaxCover is the most
	// a request may ask for (default and limit subscriptions.MaxCover).
	Cover, MaxCover int
	// MaxVertices bounds a polygon before its costlier checks run
	// (default: the store's, subscriptions.Limits.MaxVertices).
	MaxVertices int
}

// DefaultCover is how many cells cover a circle or a polygon by default:
// the fastest of 1, 2, 4, 8 and 16 over New York with 2,000 and 10,000
// circles (docs/broker-benchmarks.md, Geometry).
const DefaultCover = 4

// WithDefaults fills unset fields and checks the rest.
func (g Grid) WithDefaults() (Grid, error) {
	if g.Level == 0 {
		g.Level = geo.DefaultLevel
	}
	if g.MaxCover == 0 {
		g.MaxCover = subscriptions.MaxCover
	}
	if g.Cover == 0 {
		g.Cover = min(DefaultCover, g.MaxCover)
	}
	if g.MaxVertices == 0 {
		g.MaxVertices = subscriptions.Limits{}.WithDefaults().MaxVertices
	}
	switch {
	case g.Level < 1 || g.Level > geo.MaxLevel:
		return g, fmt.Errorf("geo level %d: use 1 to %d", g.Level, geo.MaxLevel)
	case g.MaxCover < 1 || g.MaxCover > subscriptions.MaxCover:
		return g, fmt.Errorf("max cover %d: use 1 to %d", g.MaxCover, subscriptions.MaxCover)
	case g.Cover < 1 || g.Cover > g.MaxCover:
		return g, fmt.Errorf("cover %d: use 1 to the max cover, %d", g.Cover, g.MaxCover)
	}
	return g, nil
}

// NewLocator returns a Locator over grid (checked by WithDefaults) and
// topics (nil: none).
func NewLocator(grid Grid, topics *dewey.Topics) (*Locator, error) {
	g, err := grid.WithDefaults()
	if err != nil {
		return nil, err
	}
	return &Locator{grid: g, topics: topics, cache: newPubCache(pubCacheEntries, pubCacheBytes),
		cborCache: newPubCache(pubCacheEntries, pubCacheBytes)}, nil
}

// Grid is the locator's grid, defaults filled.
func (l *Locator) Grid() Grid { return l.grid }

// NearJSON is a query's circle.
type NearJSON struct {
	Lat     *float64 `json:"lat"`
	Lng     *float64 `json:"lng"`
	RadiusM *float64 `json:"radius_m"`
}

// place is where a request stands: its cells, and for a point, a circle
// or a polygon its shape.
type place struct {
	cell  subscriptions.Cell
	cover []subscriptions.Cell // every cell, when more than one
	shape *geo.Shape
}

// locate takes exactly one of cell, lat+lng (+radius_m, +cover), polygon
// (+cover) and topic.
func (l *Locator) locate(req *Request) (place, error) {
	if e := checkForms(req); e != nil {
		return place{}, e
	}
	if e := l.checkMaxCover(req.Cover); e != nil {
		return place{}, e
	}
	switch {
	case req.Cell != nil:
		c, err := subscriptions.ParseCell(*req.Cell)
		if err != nil {
			return place{}, errorf(CodeBadRequest, "cell %q: %v", *req.Cell, err)
		}
		// Any Dewey id is a cell (the thesis's hierarchy); those of the
		// world grid also have a region, which shapes are refined against.
		return place{cell: c}, nil
	case req.Topic != nil:
		if l.topics == nil {
			return place{}, errorf(CodeBadRequest, "this broker has no topic registry")
		}
		id, err := l.topics.Resolve(*req.Topic)
		if errors.Is(err, dewey.ErrBadTopic) {
			return place{}, errorf(CodeBadRequest, "%v", err)
		}
		return place{cell: subscriptions.Cell{NS: subscriptions.NSTopic, ID: id}}, err
	case req.Polygon != nil:
		s, err := geo.ParseGeoJSON(req.Polygon, l.grid.MaxVertices)
		if err != nil {
			return place{}, errorf(CodeBadRequest, "polygon: %v", trimGeo(err))
		}
		return l.cover(s, req.Cover)
	}
	return l.circle(req.Lat, req.Lng, req.RadiusM, req.Cover, "")
}

// circle locates a point (no radius) or a circle; field prefixes the
// names of the fields in errors (a query's "near.").
func (l *Locator) circle(lat, lng, radius *float64, cover *int, field string) (place, error) {
	if lat == nil || lng == nil {
		return place{}, errorf(CodeBadRequest, "%slat and %slng go together", field, field)
	}
	if err := geo.CheckLatLng(*lat, *lng); err != nil {
		// "lat 91 not in -90…90", each field named as the request gives it.
		return place{}, errorf(CodeBadRequest, "%s%s", field, strings.TrimPrefix(err.Error(), geo.ErrLatLng.Error()+": "))
	}
	if radius == nil {
		s, _ := geo.NewCircle(*lat, *lng, 0)
		id, _ := geo.PointCell(*lat, *lng, l.grid.Level)
		return place{cell: subscriptions.Cell{NS: subscriptions.NSCell, ID: id}, shape: s}, nil
	}
	if !(*radius > 0) {
		return place{}, errorf(CodeBadRequest, "%sradius_m %v: a circle's radius must be more than 0 metres (leave radius_m out for a point)", field, *radius)
	}
	s, err := geo.NewCircle(*lat, *lng, *radius)
	if err != nil {
		return place{}, errorf(CodeBadRequest, "%sradius_m: %v", field, trimGeo(err))
	}
	return l.cover(s, cover)
}

// cover puts a shape on its cover of at most k cells (the grid's default
// when the request gives none).
func (l *Locator) cover(s *geo.Shape, k *int) (place, error) {
	n := l.grid.Cover
	if k != nil {
		n = *k
	}
	ids, err := s.Cover(n, l.grid.Level)
	if err != nil {
		return place{}, errorf(CodeBadRequest, "cover: %v", trimGeo(err))
	}
	cells := make([]subscriptions.Cell, len(ids))
	for i, id := range ids {
		cells[i] = subscriptions.Cell{NS: subscriptions.NSCell, ID: id}
	}
	if len(cells) == 1 {
		return place{cell: cells[0], shape: s}, nil
	}
	return place{cell: cells[0], cover: cells, shape: s}, nil
}

// checkForms refuses a request that gives no location or more than one,
// and a cover without a circle or a polygon or out of range, before
// anything (a topic) is registered.
func checkForms(req *Request) *Error {
	forms := 0
	for _, set := range []bool{req.Cell != nil, req.Lat != nil || req.Lng != nil, req.Polygon != nil, req.Topic != nil} {
		if set {
			forms++
		}
	}
	switch {
	case req.RadiusM != nil && (req.Lat == nil || req.Lng == nil):
		return errorf(CodeBadRequest, "radius_m needs lat and lng")
	case forms != 1:
		return errorf(CodeBadRequest, "give exactly one location: cell, lat+lng (with optional radius_m), polygon, or topic")
	}
	return checkCover(req.Cover, req.RadiusM != nil || req.Polygon != nil)
}

// checkCover refuses a cover without a shape to cover or out of range.
func checkCover(k *int, shaped bool) *Error {
	switch {
	case k == nil:
		return nil
	case !shaped:
		return errorf(CodeBadRequest, "cover needs a circle (lat, lng and radius_m) or a polygon")
	case *k < 1 || *k > subscriptions.MaxCover:
		return errorf(CodeBadRequest, "cover %d: give 1 to %d cells", *k, subscriptions.MaxCover)
	}
	return nil
}

// checkMaxCover refuses a cover above this broker's maximum.
func (l *Locator) checkMaxCover(k *int) *Error {
	if k != nil && *k > l.grid.MaxCover {
		return errorf(CodeBadRequest, "cover %d: this broker allows at most %d cells", *k, l.grid.MaxCover)
	}
	return nil
}

// trimGeo drops the package prefix from geo's errors: clients see what
// is wrong, not where it was found.
func trimGeo(err error) string {
	msg := err.Error()
	for _, p := range []string{"geo: bad shape: ", "geo: "} {
		if len(msg) > len(p) && msg[:len(p)] == p {
			return msg[len(p):]
		}
	}
	return msg
}

// coverStrings renders a cover for a reply; nil for one cell.
func coverStrings(cover *subscriptions.Cover) []string {
	if cover == nil {
		return nil
	}
	out := make([]string, len(cover.Cells))
	for i, c := range cover.Cells {
		out[i] = c.String()
	}
	return out
}

// isNull reports whether a raw JSON value was given as null.
func isNull(raw json.RawMessage) bool { return string(raw) == "null" }
