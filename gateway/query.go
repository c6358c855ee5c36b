package gateway

import (
	"errors"

	"github.com/seed84792017/cellcast/service"
)

// defaultK is how many results a query without k asks for.
const defaultK = 10

// query answers "the latest k live publications where attr = eq" or
// "where from ≤ attr ≤ to".
func (g *Gateway) query(s session, req *Request) error {
	if req.Attr == "" {
		return errorf(CodeBadRequest, "attr required: one of the indexed attributes")
	}
	q := service.Query{Attr: req.Attr, Eq: req.Eq, From: req.From, To: req.To, K: defaultK}
	if req.K != nil {
		q.K = *req.K
	}
	res, err := g.svc.Query(q)
	if err != nil {
		return queryError(err)
	}
	g.replyPaged(s, req, encode(resultsReply{ID: req.ID, Op: "results", Attr: req.Attr, Count: len(res)}), "results", g.render(res))
	return nil
}

func queryError(err error) error {
	if errors.Is(err, service.ErrBadQuery) || errors.Is(err, service.ErrNoCatalog) {
		return errorf(CodeBadRequest, "%v", err)
	}
	return err
}
