package catalog

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/seed84792017/cellcast/secondary"
	"github.com/seed84792017/cellcast/subscriptions"
)

// Source lists the publications the store holds: *listdb.Store is one.
// ScanPublications calls fn with every publication live at the stamp it
// returns, and reports none stamped at or after it.
type Source interface {
	ScanPublications(ctx context.Context, fn func(*subscriptions.Publication) error) (asOf int64, err error)
}

// ReconcileStats says what Reconcile changed.
type ReconcileStats struct {
	Added     int // live stored publications the catalog missed
	Rewritten int // live stored publications written again (unsynced catalog)
	Deleted   int // catalogued publications the store does not hold
}

// Reconcile makes the catalog agree with src, the store it catalogues.
// The catalog is written after the store, so a crash in between leaves a
// publication stored (and, under --durability os, even acknowledged) but
// not catalogued; and a catalogue row may outlive a store write that never
// became durable. Reconcile adds every live publication of src that the
// catalog lacks and deletes every catalogued publication stamped before
// the scan that src does not hold. Publications catalogued while it runs,
// stamped after the scan, are left alone, so it is safe beside Add; a
// broker runs it once, after opening the store and the catalog. It holds
// the ids of the live publications in memory.
func (c *Catalog) Reconcile(ctx context.Context, src Source) (ReconcileStats, error) {
	var st ReconcileStats
	stored := map[string]bool{}
	asOf, err := src.ScanPublications(ctx, func(p *subscriptions.Publication) error {
		pid := p.Pid()
		stored[pid] = true
		if !c.synced {
			if err := c.Add(p); err != nil {
				return fmt.Errorf("catalog: adding %s: %w", pid, err)
			}
			st.Rewritten++
			return nil
		}
		_, err := c.t.Get(pid)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, secondary.ErrNotFound):
			return fmt.Errorf("catalog: reading %s: %w", pid, err)
		}
		if err := c.Add(p); err != nil {
			return fmt.Errorf("catalog: adding %s: %w", pid, err)
		}
		st.Added++
		return nil
	})
	if err != nil {
		return st, fmt.Errorf("catalog: scanning the store: %w", err)
	}
	// Every row, expired or not (the janitor would get to the expired
	// ones, but a row the store lacks is wrong whatever its expiry).
	rows, err := c.t.RangeLookup(colExpires, secondary.IntValue(math.MinInt64), secondary.IntValue(math.MaxInt64), 0)
	if err != nil {
		return st, fmt.Errorf("catalog: listing rows: %w", err)
	}
	for _, r := range rows {
		if stored[r.Key] {
			continue
		}
		tp, _, err := subscriptions.ParseID(r.Key)
		if err != nil {
			return st, fmt.Errorf("catalog: row %q: %w", r.Key, err)
		}
		if tp >= asOf {
			continue // catalogued after the scan
		}
		if err := ctx.Err(); err != nil {
			return st, err
		}
		if err := c.t.Delete(r.Key); err != nil && !errors.Is(err, secondary.ErrNotFound) {
			return st, fmt.Errorf("catalog: deleting %s: %w", r.Key, err)
		}
		st.Deleted++
	}
	return st, nil
}
