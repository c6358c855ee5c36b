package listdb

import (
	"context"
	"fmt"

	"github.com/seed84792017/cellcast/subscriptions"
)

// ErrClockFixed is returned by Restore when the store's clock cannot be
// lifted above a restored stamp (it is not a *subscriptions.SystemClock
// or another clock with AtLeast).
var ErrClockFixed = fmt.Errorf("listdb: the store's clock cannot be lifted above restored stamps")

// Restore writes a record stamped elsewhere, a one-record fragment made
// by EncodeSubscription or EncodePublication (a cluster shard's
// replicated log, replayed by its new owner), under the keys its own
// SUBSCRIBE or PUBLISH stored it under, and lifts the clock above its
// stamp so later operations stamp after it. It matches nothing and
// notifies nobody: that happened when the record was first written.
// Records must come in stamp order, as the store wrote them; a record
// that has expired is skipped.
func (st *Store) Restore(ctx context.Context, frag []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	lift, ok := st.clock.(interface{ AtLeast(int64) })
	if !ok {
		return ErrClockFixed
	}
	var (
		rec   Rec
		n     int
		cell  subscriptions.Cell
		cover *subscriptions.Cover
		uid   string
		list  = Pubs
	)
	err := forEach(frag, func(r *Rec) bool {
		rec, n = *r, n+1
		return true
	})
	if err == nil && n != 1 {
		err = fmt.Errorf("%w: a restored fragment holds %d records, not one", ErrCorrupt, n)
	}
	if err != nil {
		return err
	}
	switch rec.Kind {
	case KindPublication:
		p, err := rec.Publication()
		if err != nil {
			return err
		}
		cell, cover = p.Cell, p.Cover
	case KindSubscription:
		s, err := rec.Subscription()
		if err != nil {
			return err
		}
		cell, cover, list = s.Cell, s.Cover, Subs
		if s.SelfJoin {
			uid = s.Uid
		}
	default:
		return fmt.Errorf("%w: a restored record of kind %d (cancels are restored by Unsubscribe)", ErrCorrupt, rec.Kind)
	}
	st.mu.Lock()
	lift.AtLeast(rec.T)
	now := st.clock.Now()
	if rec.Tmax <= now {
		st.mu.Unlock()
		return nil
	}
	st.cfg.inflight.begin(now)
	defer st.cfg.inflight.end(now)
	cells := []subscriptions.Cell{cell}
	var keys [][]byte
	if cover == nil {
		keys, err = st.cellsFor(cell)
	} else {
		cells = cover.Cells
		keys, err = st.keysFor(cover.Cells)
	}
	if err == nil && uid != "" {
		keys = append(keys, userKey(uid))
	}
	for _, c := range cells {
		if err == nil {
			err = st.raiseMarks(list, c, rec.Tmax-rec.T)
		}
	}
	var c Commit
	if err == nil {
		c, err = st.write(list, keys, frag, now)
	}
	st.mu.Unlock()
	if err != nil {
		return err
	}
	return st.settle(c)
}

// DecodePublication reads a fragment made by EncodePublication.
func DecodePublication(frag []byte) (subscriptions.Publication, error) {
	r, err := decodeOne(frag, KindPublication)
	if err != nil {
		return subscriptions.Publication{}, err
	}
	return r.Publication()
}

// DecodeSubscription reads a fragment made by EncodeSubscription.
func DecodeSubscription(frag []byte) (subscriptions.Subscription, error) {
	r, err := decodeOne(frag, KindSubscription)
	if err != nil {
		return subscriptions.Subscription{}, err
	}
	return r.Subscription()
}

// decodeOne reads a fragment's first record, which must be of kind.
func decodeOne(frag []byte, kind byte) (Rec, error) {
	var (
		rec Rec
		n   int
	)
	if err := forEach(frag, func(r *Rec) bool {
		rec, n = *r, 1
		return false
	}); err != nil {
		return rec, err
	}
	switch {
	case n == 0:
		return rec, fmt.Errorf("%w: an empty fragment", ErrCorrupt)
	case rec.Kind != kind:
		return rec, fmt.Errorf("%w: a record of kind %d, not %d", ErrCorrupt, rec.Kind, kind)
	}
	return rec, nil
}
