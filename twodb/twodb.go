package twodb

import (
	"context"
	"errors"
	"sync"

	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/lsm"
	"github.com/seed84792017/cellcast/lsm/vfs"
)

// Open opens (or creates) a TwoDB store: dir/pubs and dir/subs, each with
// half of the store's default memory budget unless opts says otherwise.
func Open(dir string, cfg listdb.Config, opts *lsm.Options) (*listdb.Store, error) {
	o := cfg.DBOptions(opts, 2)
	pubs, err := lsm.Open(vfs.Join(dir, "pubs"), o)
	if err != nil {
		return nil, err
	}
	subs, err := lsm.Open(vfs.Join(dir, "subs"), o)
	if err != nil {
		pubs.Close()
		return nil, err
	}
	st, err := listdb.NewStore(&backend{pubs: pubs, subs: subs}, cfg)
	if err != nil {
		pubs.Close()
		subs.Close()
		return nil, err
	}
	return st, nil
}

type backend struct {
	pubs, subs *lsm.DB
	// mu guards last: where each engine's log ended after the latest
	// Append to it (the store calls Append under its own lock, in stamp
	// order, so last covers every record applied before the next one).
	mu   sync.Mutex
	last [2]lsm.WALPos
}

func (b *backend) db(l listdb.List) *lsm.DB {
	if l == listdb.Pubs {
		return b.pubs
	}
	return b.subs
}

// Append writes to the engine of the appends' list. Every operation
// writes one list only, so one engine and one commit: the two engines
// never hold halves of one acknowledged write. (The store's metadata, in
// the pubs engine, is synced before any record that relies on it.) The
// commit also notes, in Read, where the other engine's log ends: the
// operation's scan may have read records there that are applied but not
// yet durable, and Wait makes them durable before the answer.
func (b *backend) Append(appends []listdb.Append) (listdb.Commit, error) {
	if len(appends) == 0 {
		return listdb.Commit{}, nil
	}
	l := appends[0].List
	batch := lsm.NewBatch()
	for _, a := range appends {
		if a.List != l {
			return listdb.Commit{}, errors.New("twodb: one append writes to both lists")
		}
		if err := batch.Merge(a.Cell, a.Fragment); err != nil {
			return listdb.Commit{}, err
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	pos, err := b.db(l).ApplyNoSyncWait(batch)
	if err != nil {
		return listdb.Commit{}, err
	}
	b.last[l] = pos
	return listdb.Commit{Engine: int(l), Pos: pos, Read: b.last[1-l]}, nil
}

// Wait makes the commit's own write durable, then what the other engine
// held when it was applied (an earlier operation's write, which this one
// may have read and reported). Both waits join their engine's group
// commit.
func (b *backend) Wait(c listdb.Commit, sync bool) error {
	l := listdb.List(c.Engine)
	if err := b.db(l).WaitWAL(c.Pos, sync); err != nil {
		return err
	}
	return b.db(1-l).WaitWAL(c.Read, sync)
}

func (b *backend) Visit(cell, subtreeEnd []byte, lists listdb.Lists, filters []lsm.BlockPropertyFilter, fn func(listdb.List, *lsm.Fragment) lsm.VisitDecision) error {
	own := &lsm.VisitOptions{Filters: filters}
	desc := &lsm.VisitOptions{Filters: filters, Prefix: listdb.DescendantsPrefix(cell, false, 0)}
	// Descendant keys extend cell with at least one component byte (≥ 0x02).
	descStart := append(append(make([]byte, 0, len(cell)+1), cell...), 0x02)
	for _, l := range []listdb.List{listdb.Pubs, listdb.Subs} {
		if (l == listdb.Pubs && !lists.Pubs) || (l == listdb.Subs && !lists.Subs) {
			continue
		}
		stopped := false
		route := func(f *lsm.Fragment) lsm.VisitDecision {
			d := fn(l, f)
			stopped = d == lsm.VisitStop
			return d
		}
		err := b.db(l).VisitKey(cell, own, route)
		if err == nil && !stopped && subtreeEnd != nil {
			err = b.db(l).VisitRange(descStart, subtreeEnd, desc, route)
		}
		if err != nil || stopped {
			return err
		}
	}
	return nil
}

func (b *backend) Meta() listdb.MetaStore { return listdb.LSMMeta(b.pubs) }
func (b *backend) Flush() error           { return errors.Join(b.pubs.Flush(), b.subs.Flush()) }
func (b *backend) Compact(ctx context.Context) error {
	return errors.Join(b.pubs.Compact(ctx, nil, nil), b.subs.Compact(ctx, nil, nil))
}

// Checkpoint copies each engine into its directory under dir. Each
// operation writes one engine, so the two copies need not be one moment:
// each holds what was acknowledged before the call.
func (b *backend) Checkpoint(dir string) error {
	if err := b.pubs.Checkpoint(vfs.Join(dir, "pubs")); err != nil {
		return err
	}
	return b.subs.Checkpoint(vfs.Join(dir, "subs"))
}
func (b *backend) Metrics() []*lsm.Metrics {
	return []*lsm.Metrics{b.pubs.Metrics(), b.subs.Metrics()}
}
func (b *backend) Err() error {
	if err := b.pubs.Err(); err != nil {
		return err
	}
	return b.subs.Err()
}
func (b *backend) Close() error { return errors.Join(b.pubs.Close(), b.subs.Close()) }

// ScanList implements listdb.ListScanner: both namespaces' keys in l's
// engine (the metadata beside the publications has keys of its own).
func (b *backend) ScanList(l listdb.List, fn func(cell, list []byte) error) error {
	return listdb.ScanNamespaces(b.db(l), fn)
}
