package service

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed84792017/cellcast/catalog"
	"github.com/seed84792017/cellcast/delivery"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/subscriptions"
)

// Errors of Query, each matched with errors.Is: the caller's mistakes.
var (
	ErrNoCatalog = errors.New("service: this broker keeps no catalog of publications (started with --index none)")
	ErrBadQuery  = catalog.ErrBadQuery
	// ErrUnavailable: the operation cannot run now but may succeed when
	// retried (a cluster shard changing owners).
	ErrUnavailable = errors.New("service: unavailable for now, retry")
)

// MaxK is the most results one query may ask for.
const MaxK = catalog.MaxK

// Query asks for the latest K live publications whose attribute Attr
// equals Eq, or when Eq is nil lies in [From, To]. Values are as clients
// write them: an RFC 3339 time for tp, the string itself otherwise.
type Query struct {
	Attr         string
	Eq, From, To *string
	K            int
}

// Config shapes a Service.
type Config struct {
	Store *listdb.Store
	// Catalog learns every publication and answers Query; nil: no
	// queries.
	Catalog *catalog.Catalog
	// Catalogues picks the publications the catalog learns; nil: all. A
	// cluster's shard catalogues only the publications whose home it is,
	// so a publication stored in several shards is found once.
	Catalogues func(*subscriptions.Publication) bool
	// Encode renders a publication once for all its notifications.
	Encode func(*subscriptions.Publication) []byte
	// MaxBacklog and MaxBacklogBytes bound the notifications owed and not
	// yet handed to a sink (delivery.Config); zero takes the defaults.
	MaxBacklog      int
	MaxBacklogBytes int64
	// MaxLag: how long subscribers may be behind together before
	// publishes are refused (delivery.Config); zero takes the default.
	MaxLag time.Duration
	Log    *slog.Logger
}

// Stats are the hub's counters and the catalog's failures.
type Stats struct {
	delivery.Stats
	// CatalogErrors counts publications stored and delivered that the
	// catalog failed to record (queries miss them).
	CatalogErrors uint64
}

// Service is the pub/sub core. It is safe for concurrent use.
type Service struct {
	cfg           Config
	hub           *delivery.Hub
	log           *slog.Logger
	catalogErrors atomic.Uint64

	stop      chan struct{} // ends the route janitor
	janitor   sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// New returns a service over cfg.Store, which it now owns.
func New(cfg Config) *Service {
	s := &Service{cfg: cfg, log: cfg.Log, stop: make(chan struct{})}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.hub = delivery.New(delivery.Config{Store: cfg.Store, Clock: cfg.Store.Clock(), Encode: cfg.Encode,
		MaxBacklog: cfg.MaxBacklog, MaxBacklogBytes: cfg.MaxBacklogBytes, MaxLag: cfg.MaxLag})
	s.janitor.Add(1)
	go s.expireRoutes()
	return s
}

// expireRoutes drops the routes of ended subscriptions every second, and
// says once in the log when the store stops taking writes.
func (s *Service) expireRoutes() {
	defer s.janitor.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	told := false
	for {
		select {
		case <-t.C:
			s.hub.Expire(s.cfg.Store.Clock().Now())
			if err := s.Err(); err != nil && !told {
				told = true
				s.log.Error("the store refuses writes from now on; every acknowledged write is safe on disk. "+
					"Fix the cause (free disk space, replace a failing disk), then restart the broker: it replays its log and carries on", "err", err)
			}
		case <-s.stop:
			return
		}
	}
}

// Subscribe stores the subscription and routes its notifications to sink
// (nil: none). answer runs before any notification reaches sink.
func (s *Service) Subscribe(ctx context.Context, req *subscriptions.SubscribeRequest, sink delivery.Sink, answer func(*subscriptions.SubscribeResult, string)) error {
	return s.hub.Subscribe(ctx, req, sink, answer)
}

// SubscribeTagged is Subscribe with the route tagged for a sink that
// serves many (delivery.Hub.SubscribeTagged).
func (s *Service) SubscribeTagged(ctx context.Context, req *subscriptions.SubscribeRequest, sink delivery.Sink, tag uint64, answer func(*subscriptions.SubscribeResult, string)) error {
	return s.hub.SubscribeTagged(ctx, req, sink, tag, answer)
}

// Publish stores the publication, releases it for dispatch, catalogues
// it, and then answers. It fails with a *delivery.OverloadedError while
// delivery is too far behind; nothing is stored then.
func (s *Service) Publish(ctx context.Context, req *subscriptions.PublishRequest, answer func(*subscriptions.PublishResult)) error {
	var stored *subscriptions.PublishResult
	if err := s.hub.Publish(ctx, req, func(res *subscriptions.PublishResult) { stored = res }); err != nil {
		return err
	}
	s.catalogue(&stored.Pub)
	answer(stored)
	return nil
}

// PublishStaged is Publish for a cluster shard's owner, which appends
// the publication to the shard's log before anyone may hear of it: it
// stores and answers, then commit(true) catalogues and releases it for
// dispatch, commit(false) drops it (delivery.Hub.PublishStaged). commit
// must be called once.
func (s *Service) PublishStaged(ctx context.Context, req *subscriptions.PublishRequest, answer func(*subscriptions.PublishResult)) (commit func(ok bool), err error) {
	var stored *subscriptions.PublishResult
	release, err := s.hub.PublishStaged(ctx, req, func(res *subscriptions.PublishResult) { stored = res })
	if err != nil {
		return nil, err
	}
	answer(stored)
	return func(ok bool) {
		if ok {
			s.catalogue(&stored.Pub)
		}
		release(ok)
	}, nil
}

// catalogue files a stored publication. A failure loses no publication
// (it is stored and delivered) but hides it from queries: it is logged
// and counted.
func (s *Service) catalogue(p *subscriptions.Publication) {
	if s.cfg.Catalog == nil || p.Tmax <= p.Tp {
		return // no catalog, or a publication with no lifetime, never stored
	}
	if s.cfg.Catalogues != nil && !s.cfg.Catalogues(p) {
		return
	}
	if err := s.cfg.Catalog.Add(p); err != nil {
		s.log.Error("catalog: a publication is stored and delivered but cannot be queried", "pid", p.Pid(), "err", err)
		s.catalogErrors.Add(1)
	}
}

// Limits are the bounds the store checks requests against, for callers
// that validate a request before acting on it (registering a topic).
func (s *Service) Limits() subscriptions.Limits { return s.cfg.Store.Limits() }

// Unsubscribe cancels owner's subscription sid; stamped hears when the
// cancel has its stamp.
func (s *Service) Unsubscribe(ctx context.Context, sid, owner string, stamped subscriptions.Stamped) error {
	return s.hub.Unsubscribe(ctx, sid, owner, stamped)
}

// Resume moves owner's subscription sid to sink and replays what it
// missed after the sequence number after; answer runs first.
func (s *Service) Resume(ctx context.Context, sid string, after int64, owner string, sink delivery.Sink, answer func(*subscriptions.ReplayResult)) error {
	return s.hub.Resume(ctx, sid, after, owner, sink, answer)
}

// ResumeTagged is Resume with the route tagged for a sink that serves
// many (delivery.Hub.ResumeTagged).
func (s *Service) ResumeTagged(ctx context.Context, sid string, after int64, owner string, sink delivery.Sink, tag uint64, answer func(*subscriptions.ReplayResult)) error {
	return s.hub.ResumeTagged(ctx, sid, after, owner, sink, tag, answer)
}

// CatchUp replays to sink what its lagging subscriptions missed
// (delivery.Hub.CatchUp).
func (s *Service) CatchUp(ctx context.Context, sink delivery.Sink) (int, error) {
	return s.hub.CatchUp(ctx, sink)
}

// Detach stops routing sids to sink, which is going away.
func (s *Service) Detach(sids []string, sink delivery.Sink) {
	for _, sid := range sids {
		s.hub.Detach(sid, sink)
	}
}

// Query returns the latest live publications matching q, newest first,
// unless ctx ends first.
func (s *Service) Query(ctx context.Context, q Query) ([]subscriptions.Publication, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := s.cfg.Catalog
	if c == nil {
		return nil, ErrNoCatalog
	}
	cq := catalog.Query{Attr: q.Attr, K: q.K}
	var err error
	parse := func(v *string) *catalog.Value {
		if v == nil || err != nil {
			return nil
		}
		var cv catalog.Value
		cv, err = c.ParseValue(q.Attr, *v)
		return &cv
	}
	cq.Eq, cq.From, cq.To = parse(q.Eq), parse(q.From), parse(q.To)
	if err != nil {
		return nil, err
	}
	return c.Find(cq)
}

// Err is nil while the store takes writes, and otherwise its sticky
// write failure (listdb.Backend.Err): the broker is then not ready.
func (s *Service) Err() error { return s.cfg.Store.Backend().Err() }

// Drain waits until every publication released so far is dispatched.
func (s *Service) Drain() { s.hub.Drain() }

// Stats returns the counters.
func (s *Service) Stats() Stats {
	return Stats{Stats: s.hub.Stats(), CatalogErrors: s.catalogErrors.Load()}
}

// Close dispatches what was released, stops the janitor, then flushes
// and closes the store and the catalog. Call it once no operation runs
// any more; later calls return the first one's error.
func (s *Service) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.janitor.Wait()
		s.hub.Close()
		errs := []error{s.cfg.Store.Backend().Flush(), s.cfg.Store.Close()}
		if s.cfg.Catalog != nil {
			errs = append(errs, s.cfg.Catalog.Close())
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}
