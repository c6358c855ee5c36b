package gateway

import (
	"context"
	"time"

	"github.com/seed84792017/cellcast/geo"
	"github.com/seed84792017/cellcast/protocol"
	"github.com/seed84792017/cellcast/service"
	"github.com/seed84792017/cellcast/subscriptions"
)

// defaultK is how many results a query without k asks for.
const defaultK = 10

// query answers "the latest k live publications where attr = eq" or
// "where from ≤ attr ≤ to", or by place: "the latest k live publications
// that meet this circle (near) or polygon (within)".
func (g *Gateway) query(ctx context.Context, s session, req *Request) error {
	if req.Near != nil || req.Within != nil {
		return g.queryPlace(ctx, s, req)
	}
	if req.Attr == "" {
		return errorf(CodeBadRequest, "attr required: one of the indexed attributes (or near or within, for a query by place)")
	}
	q := service.Query{Attr: req.Attr, Eq: req.Eq, From: req.From, To: req.To, K: defaultK}
	if req.K != nil {
		q.K = *req.K
	}
	res, err := g.svc.Query(ctx, q)
	if err != nil {
		return err // CodeOf makes a bad query a bad_request
	}
	g.replyPaged(s, req, encode(resultsReply{ID: req.ID, Op: protocol.OpResults, Attr: req.Attr, Count: len(res)}), protocol.FieldResults, g.render(res))
	return nil
}

// queryPlace runs a query by place as a subscription with no future
// window (never stored) on the place's cover: the store's cells find the
// candidates, geometry decides, and the newest k come back. from and to
// bound the publications' stamps; attr and eq (or filter) their
// attributes, attr "uid" their publisher.
func (g *Gateway) queryPlace(ctx context.Context, s session, req *Request) error {
	uid, e := g.actor(s, req, false)
	if e != nil {
		return e
	}
	if uid == "" {
		uid = "query"
	}
	if req.Near != nil && req.Within != nil {
		return errorf(CodeBadRequest, "give near or within, not both")
	}
	if req.Cell != nil || req.Lat != nil || req.Lng != nil || req.RadiusM != nil || req.Polygon != nil || req.Topic != nil {
		return errorf(CodeBadRequest, "a query by place takes near or within, not cell, lat, lng, radius_m, polygon or topic")
	}
	if e := checkCover(req.Cover, true); e != nil {
		return e
	}
	if e := g.loc.checkMaxCover(req.Cover); e != nil {
		return e
	}
	var at place
	var err error
	if req.Near != nil {
		at, err = g.loc.circle(req.Near.Lat, req.Near.Lng, req.Near.RadiusM, req.Cover, "near.")
	} else {
		var sh *geo.Shape
		if sh, err = geo.ParseGeoJSON(req.Within, g.loc.grid.MaxVertices); err != nil {
			return errorf(CodeBadRequest, "within: %v", trimGeo(err))
		}
		at, err = g.loc.cover(sh, req.Cover)
	}
	if err != nil {
		return err
	}
	k := defaultK
	if req.K != nil {
		k = *req.K
	}
	if k < 1 || k > service.MaxK {
		return errorf(CodeBadRequest, "k must be 1 to %d, got %d", service.MaxK, k)
	}
	limits := g.svc.Limits().WithDefaults()
	sr := &subscriptions.SubscribeRequest{Uid: uid, Cell: at.cell, Cover: at.cover, Shape: at.shape,
		Past: max(limits.MaxPast, limits.MaxExpiry), Query: subscriptions.Narrow{Limit: k}}
	if req.From != nil {
		from, err := queryTime("from", *req.From)
		if err != nil {
			return err
		}
		sr.Past = min(sr.Past, max(0, time.Since(from)))
	}
	if req.To != nil {
		to, err := queryTime("to", *req.To)
		if err != nil {
			return err
		}
		sr.Query.Until = to.UnixNano()
	}
	if req.Filter != nil {
		sr.Filter = subscriptions.Filter{Keyword: req.Filter.Keyword, Attrs: req.Filter.Attrs}
	}
	switch {
	case req.Attr == "" && req.Eq == nil:
	case req.Attr == "" || req.Eq == nil:
		return errorf(CodeBadRequest, "a query by place narrows by attribute with attr and eq together")
	case req.Attr == "uid":
		sr.Query.Publisher = *req.Eq
	case req.Attr == "tp":
		return errorf(CodeBadRequest, "a query by place bounds tp with from and to, not eq")
	default:
		if sr.Filter.Attrs == nil {
			sr.Filter.Attrs = map[string]string{}
		}
		sr.Filter.Attrs[req.Attr] = *req.Eq
	}
	placeName := "near"
	if req.Within != nil {
		placeName = "within"
	}
	return g.svc.Subscribe(ctx, sr, nil, func(res *subscriptions.SubscribeResult, _ string) {
		past := res.Rendered
		if past == nil {
			past = g.render(res.Past)
		}
		g.replyPaged(s, req, encode(resultsReply{ID: req.ID, Op: protocol.OpResults, Place: placeName, Count: len(past)}), protocol.FieldResults, past)
	})
}

// queryTime reads a query's time bound.
func queryTime(field, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return t, errorf(CodeBadRequest, "%s %q is not an RFC 3339 time", field, s)
	}
	return t, nil
}
