package gateway

import (
	"errors"

	"github.com/seed84792017/cellcast/catalog"
	"github.com/seed84792017/cellcast/secondary"
	"github.com/seed84792017/cellcast/subscriptions"
)

// defaultK is how many results a query without k asks for.
const defaultK = 10

// catalogue files a stored publication in the catalog before its answer
// goes, so a client's own query right after publishing finds it. A
// failure here loses no publication (it is stored and delivered) but
// hides it from queries: it is logged and counted.
func (g *Gateway) catalogue(p *subscriptions.Publication) {
	if g.cfg.Catalog == nil || p.Tmax <= p.Tp {
		return // no catalog, or a publication with no lifetime, never stored
	}
	if err := g.cfg.Catalog.Add(p); err != nil {
		g.log.Error("catalog: a publication is stored and delivered but cannot be queried", "pid", p.Pid(), "err", err)
		if g.metrics != nil {
			g.metrics.CatalogErrors.Inc()
		}
	}
}

// query answers "the latest k live publications where attr = eq" or
// "where from ≤ attr ≤ to".
func (g *Gateway) query(s session, req *Request) error {
	c := g.cfg.Catalog
	if c == nil {
		return errorf(CodeBadRequest, "this broker keeps no catalog of publications (started with no --index)")
	}
	if req.Attr == "" {
		return errorf(CodeBadRequest, "attr required: one of the indexed attributes")
	}
	q := catalog.Query{Attr: req.Attr, K: defaultK}
	if req.K != nil {
		q.K = *req.K
	}
	var err error
	parse := func(s *string) *secondary.Value {
		if s == nil || err != nil {
			return nil
		}
		var v secondary.Value
		v, err = c.ParseValue(req.Attr, *s)
		return &v
	}
	q.Eq, q.From, q.To = parse(req.Eq), parse(req.From), parse(req.To)
	if err != nil {
		return queryError(err)
	}
	res, err := c.Find(q)
	if err != nil {
		return queryError(err)
	}
	g.replyPaged(s, req, encode(resultsReply{ID: req.ID, Op: "results", Attr: req.Attr, Count: len(res)}), "results", res)
	return nil
}

func queryError(err error) error {
	if errors.Is(err, catalog.ErrBadQuery) {
		return errorf(CodeBadRequest, "%v", err)
	}
	return err
}
