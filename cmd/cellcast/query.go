package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/seed84792017/cellcast/client"
)

// setString is a string flag that knows whether it was given, so an
// empty value (--eq "") differs from none.
type setString struct {
	v   string
	set bool
}

func (s *setString) String() string     { return s.v }
func (s *setString) Set(v string) error { s.v, s.set = v, true; return nil }

// queryFlags are query's flags.
type queryFlags struct {
	attr, near, within, keyword string
	eq, from, to                setString
	k, cover                    int
}

func (q *queryFlags) flags(fs *flag.FlagSet) {
	fs.StringVar(&q.attr, "attr", "", "the attribute: uid (the publisher), tp (publication time) or an attrs key;\nwith --near or --within, narrows them to publications whose attribute equals --eq")
	fs.Var(&q.eq, "eq", "the `value` to match")
	fs.Var(&q.from, "from", "the lower `bound` of a range of --attr, with --to (RFC 3339 for tp);\nwith --near or --within, the earliest publication time (RFC 3339)")
	fs.Var(&q.to, "to", "the upper `bound` of a range of --attr, with --from;\nwith --near or --within, the latest publication time (RFC 3339)")
	fs.IntVar(&q.k, "k", 10, "how many, newest first (1-1000)")
	fs.StringVar(&q.near, "near", "", "the publications that meet the circle `LAT,LNG,RADIUS` (degrees, degrees, metres);\nLAT,LNG: those whose place holds the point")
	fs.StringVar(&q.within, "within", "", "a `FILE` holding a GeoJSON Polygon or MultiPolygon, as pub --polygon: the publications that meet it")
	fs.IntVar(&q.cover, "cover", 0, "with --near and a radius, or --within: look on at most this many cells that cover the place (1-16)")
	fs.StringVar(&q.keyword, "filter", "", "with --near or --within: only publications whose description holds this keyword (case-insensitive)")
}

var errQuery = errors.New("give an attribute (--attr with --eq, or with --from and --to) or a place (--near LAT,LNG,RADIUS or --within FILE)")

// query prints the latest publications by attribute or by place.
func query(ctx context.Context, args []string, e env, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("query", flag.ContinueOnError)
	var c conn
	var q queryFlags
	c.flags(fs)
	q.flags(fs)
	if code, ok := parse(fs, args, e, stdout, stderr); !ok {
		return code
	}
	if err := c.check(); err != nil {
		return usageError(stderr, "query", err.Error())
	}
	var run func(context.Context, *client.Client) (*client.Results, error)
	if q.near != "" || q.within != "" {
		pq, err := q.place(e.stdin)
		if err != nil {
			return usageError(stderr, "query", err.Error())
		}
		run = func(ctx context.Context, cl *client.Client) (*client.Results, error) { return cl.QueryPlace(ctx, pq) }
	} else {
		aq, err := q.attribute()
		if err != nil {
			return usageError(stderr, "query", err.Error())
		}
		run = func(ctx context.Context, cl *client.Client) (*client.Results, error) { return cl.Query(ctx, aq) }
	}
	cl, err := c.dial(ctx, c.options(e, stderr))
	if err != nil {
		return c.fail(stderr, "query", err)
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := run(rctx, cl)
	if err != nil {
		return c.fail(stderr, "query", err)
	}
	pr := &printer{w: stdout, json: c.json}
	for i := range res.Publications {
		pr.publication("", "", 0, &res.Publications[i])
	}
	if !c.json {
		fmt.Fprintf(stderr, "%d of %d\n", len(res.Publications), res.Count)
	}
	return 0
}

// attribute is the query by attribute the flags give.
func (q *queryFlags) attribute() (client.QueryRequest, error) {
	switch {
	case q.attr == "":
		return client.QueryRequest{}, errQuery
	case q.cover != 0 || q.keyword != "":
		return client.QueryRequest{}, errors.New("--cover and --filter go with a place: --near or --within")
	case !q.eq.set && !q.from.set && !q.to.set:
		return client.QueryRequest{}, fmt.Errorf("--attr %s needs --eq, or --from and --to", q.attr)
	case q.eq.set && (q.from.set || q.to.set):
		return client.QueryRequest{}, errors.New("give --eq or a range (--from, --to), not both")
	case q.from.set != q.to.set:
		// The broker's range is closed: from ≤ value ≤ to.
		return client.QueryRequest{}, fmt.Errorf("--attr %s: a range needs both --from and --to", q.attr)
	}
	return client.QueryRequest{Attr: q.attr, Eq: q.eq.v, From: q.from.v, To: q.to.v, K: q.k}, nil
}

// place is the query by place the flags give; stdin serves --within -.
func (q *queryFlags) place(stdin io.Reader) (client.PlaceQuery, error) {
	pq := client.PlaceQuery{Attr: q.attr, Eq: q.eq.v, K: q.k}
	if q.near != "" && q.within != "" {
		return pq, errors.New("give --near or --within, not both")
	}
	if (q.attr != "") != q.eq.set {
		return pq, errors.New("with --near or --within, --attr and --eq go together")
	}
	for _, b := range []struct {
		flag string
		v    setString
		t    *time.Time
	}{{"from", q.from, &pq.From}, {"to", q.to, &pq.To}} {
		if !b.v.set {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, b.v.v)
		if err != nil {
			return pq, fmt.Errorf("--%s %q: with --near or --within, a publication time in RFC 3339 such as 2026-11-21T10:30:00Z", b.flag, b.v.v)
		}
		*b.t = t
	}
	if q.keyword != "" {
		pq.Filter = &client.Filter{Keyword: q.keyword}
	}
	if q.within != "" {
		g, err := readGeometry(q.within, stdin)
		if err != nil {
			return pq, fmt.Errorf("--within %s: %w", q.within, err)
		}
		pq.Place = covered(client.Polygon(g), q.cover)
		return pq, nil
	}
	lat, lng, radius, err := parseNear(q.near)
	if err != nil {
		return pq, err
	}
	if radius == nil {
		if q.cover != 0 {
			return pq, errors.New("--cover needs a circle: --near LAT,LNG,RADIUS")
		}
		pq.Place = client.Point(lat, lng)
		return pq, nil
	}
	pq.Place = covered(client.Circle(lat, lng, *radius), q.cover)
	return pq, nil
}

// parseNear reads LAT,LNG,RADIUS or LAT,LNG (radius nil).
func parseNear(s string) (lat, lng float64, radius *float64, err error) {
	parts := strings.Split(s, ",")
	nums := make([]float64, len(parts))
	for i, p := range parts {
		if nums[i], err = strconv.ParseFloat(strings.TrimSpace(p), 64); err != nil {
			break
		}
	}
	if err != nil || len(parts) < 2 || len(parts) > 3 {
		return 0, 0, nil, fmt.Errorf("--near %q: want LAT,LNG,RADIUS (degrees, degrees, metres), or LAT,LNG for a point", s)
	}
	if len(nums) == 3 {
		radius = &nums[2]
	}
	return nums[0], nums[1], radius, nil
}
