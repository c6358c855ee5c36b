package main

import (
	"strconv"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/geo"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/subscriptions"
)

// sizes are the mean bytes of a record as the store keeps it.
type sizes struct {
	sub, pub       float64 // now: a cover and the circle
	oldSub, oldPub float64 // the quad tree's: one cell of depth 12; a publication's point
	cells          float64 // cells a record is stored at now
}

// recordSizes encodes the workload's first thousand subscriptions and
// incidents as the store would, with covers of up to k cells.
func (w *workload) recordSizes(k int) sizes {
	var s sizes
	n := min(1000, len(w.subs))
	oldCell := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4}}
	for i := range n {
		sc, sshape, scells := place(w.subs[i], k)
		pc, pshape, pcells := place(w.incident(i), k)
		sub := subscriptions.Subscription{Uid: "s" + strconv.Itoa(i), Cell: sc, Cover: cover(scells), Shape: sshape, Ts: 1 << 60, Tmin: 1 << 60, Tmax: 1<<60 + 1}
		pub := subscriptions.Publication{Uid: "p", Cell: pc, Cover: cover(pcells), Shape: pshape, Tp: 1 << 60, Tmax: 1<<60 + 1}
		s.sub += float64(len(listdb.EncodeSubscription(&sub)))
		s.pub += float64(len(listdb.EncodePublication(&pub)))
		s.cells += float64(len(scells)+len(pcells)) / 2
		sub.Cell, sub.Cover, sub.Shape = oldCell, nil, nil
		pub.Cell, pub.Cover, pub.Shape = oldCell, nil, nil
		s.oldSub += float64(len(listdb.EncodeSubscription(&sub)))
		s.oldPub += float64(len(listdb.EncodePublication(&pub)) + 25) // its point: a tag and three float64
	}
	f := float64(n)
	return sizes{s.sub / f, s.pub / f, s.oldSub / f, s.oldPub / f, s.cells / f}
}

// place is where the broker puts a circle: its cover of up to k cells.
func place(c circle, k int) (subscriptions.Cell, *geo.Shape, []subscriptions.Cell) {
	sh, err := geo.NewCircle(c.lat, c.lng, c.r)
	if err != nil {
		panic(err) // the workload draws valid circles
	}
	ids, err := sh.Cover(k, geo.DefaultLevel)
	if err != nil {
		panic(err)
	}
	cells := make([]subscriptions.Cell, len(ids))
	for i, id := range ids {
		cells[i] = subscriptions.Cell{NS: subscriptions.NSCell, ID: id}
	}
	return cells[0], sh, cells
}

func cover(cells []subscriptions.Cell) *subscriptions.Cover {
	if len(cells) < 2 {
		return nil
	}
	return &subscriptions.Cover{Cells: cells}
}
