package cluster

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/seed84792017/cellcast/catalog"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/service"
	"github.com/seed84792017/cellcast/subscriptions"
)

// Queries. Every shard catalogues the publications whose home it is
// (owner.go), so a query goes to every shard and each answers with its
// own newest k; the newest k of those are the answer. A shard's answer
// comes in pages that fit a NATS message.

// maxQueries bounds the queries a shard runs at once; past it, a query
// is answered unavailable.
const maxQueries = 16

// queryPageBytes bounds the publications of one page of a shard's answer
// (their records), under NATS's 1 MiB payload limit with room for the rest.
const queryPageBytes = 512 << 10

// Query asks every shard and returns the newest q.K of their answers,
// newest first, as one broker would. It gives up when ctx ends, and
// after twice a call's attempt time if ctx has no deadline.
func (n *Node) Query(ctx context.Context, q service.Query) ([]subscriptions.Publication, error) {
	if n.cfg.Catalog == nil {
		return nil, service.ErrNoCatalog
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*attemptTimeout)
		defer cancel()
	}
	shards := n.cfg.Shards.All()
	got := make([][]subscriptions.Publication, len(shards))
	errs := make([]error, len(shards))
	var wg sync.WaitGroup
	for i, shard := range shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = n.queryShard(ctx, shard, q)
		}()
	}
	wg.Wait()
	var all []subscriptions.Publication
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", shards[i], err)
		}
		all = append(all, got[i]...)
	}
	slices.SortFunc(all, newestFirst)
	// A page asked for after new publications were catalogued may repeat
	// the end of the one before.
	all = slices.CompactFunc(all, func(a, b subscriptions.Publication) bool { return newestFirst(a, b) == 0 })
	if len(all) > q.K {
		all = all[:q.K]
	}
	return all, nil
}

// newestFirst orders publications by stamp, newest first, and those of
// the same stamp (from different shards) by cell.
func newestFirst(a, b subscriptions.Publication) int {
	if c := cmp.Compare(b.Tp, a.Tp); c != 0 {
		return c
	}
	return a.Cell.Compare(b.Cell)
}

// queryShard collects one shard's answer to q, page by page.
func (n *Node) queryShard(ctx context.Context, shard string, q service.Query) ([]subscriptions.Publication, error) {
	var out []subscriptions.Publication
	for {
		r, err := n.h.call(ctx, shard, &request{Op: opQuery, Holder: n.cfg.ID, Query: &q, Skip: len(out)}, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, r.Pubs...)
		if !r.More || len(r.Pubs) == 0 || len(out) >= q.K {
			return out, nil
		}
	}
}

// query answers a page of the shard's results for r.Query: those after
// the first r.Skip, as many as fit queryPageBytes (at least one).
func (o *owner) query(r *request) *reply {
	if r.Query == nil || r.Skip < 0 {
		return &reply{Err: toWire(fmt.Errorf("%w: a query without its terms", service.ErrBadQuery))}
	}
	select {
	case <-o.catalogReady:
		if o.catalogErr != nil {
			return &reply{Err: toWire(fmt.Errorf("%w: shard %s's catalog: %w", service.ErrUnavailable, o.name, o.catalogErr))}
		}
	default:
		return &reply{Err: toWire(fmt.Errorf("%w: shard %s is rebuilding its catalog", service.ErrUnavailable, o.name))}
	}
	pubs, err := o.svc.Query(o.n.ctx, *r.Query)
	if err != nil {
		return &reply{Err: toWire(err)}
	}
	pubs = pubs[min(r.Skip, len(pubs)):]
	size := 0
	for i := range pubs {
		if size += len(listdb.EncodePublication(&pubs[i])); size > queryPageBytes && i > 0 {
			return &reply{Pubs: pubs[:i], More: true}
		}
	}
	return &reply{Pubs: pubs}
}

// homeOnly is a shard's store as the source of its catalog: the
// publications whose home the shard is.
type homeOnly struct {
	src  catalog.Source
	home func(*subscriptions.Publication) bool
}

func (h homeOnly) ScanPublications(ctx context.Context, fn func(*subscriptions.Publication) error) (int64, error) {
	return h.src.ScanPublications(ctx, func(p *subscriptions.Publication) error {
		if !h.home(p) {
			return nil
		}
		return fn(p)
	})
}
