package cluster

// routeTable finds a holder's route by its number, once for every
// notification the holder passes on. A map lookup there was the holder's
// largest cost (cache misses in a map of tens of thousands of routes, as
// many as the hub's own lookup on the owner). The holder numbers routes
// in order, so live ones mostly fall in different slots of a table
// indexed by the number's low bits: one load finds them. The rare route
// whose slot another holds waits in spill, and growing the table (at
// half full) places every route again.
type routeTable struct {
	slots []*route // by id & (len(slots)-1)
	spill map[uint64]*route
	n     int
}

// get returns route id, or nil.
func (t *routeTable) get(id uint64) *route {
	if len(t.slots) > 0 {
		if r := t.slots[id&uint64(len(t.slots)-1)]; r != nil && r.id == id {
			return r
		}
	}
	return t.spill[id]
}

// put adds r, in place of a route of its number.
func (t *routeTable) put(r *route) {
	t.del(r.id)
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	t.place(r)
	t.n++
}

// del removes route id, if there.
func (t *routeTable) del(id uint64) {
	if len(t.slots) > 0 {
		i := id & uint64(len(t.slots)-1)
		if r := t.slots[i]; r != nil && r.id == id {
			t.slots[i] = nil
			t.n--
			return
		}
	}
	if _, ok := t.spill[id]; ok {
		delete(t.spill, id)
		t.n--
	}
}

func (t *routeTable) place(r *route) {
	i := r.id & uint64(len(t.slots)-1)
	if t.slots[i] == nil {
		t.slots[i] = r
		return
	}
	if t.spill == nil {
		t.spill = map[uint64]*route{}
	}
	t.spill[r.id] = r
}

func (t *routeTable) grow() {
	old, spill := t.slots, t.spill
	t.slots, t.spill = make([]*route, max(1024, 2*len(old))), nil
	for _, r := range old {
		if r != nil {
			t.place(r)
		}
	}
	for _, r := range spill {
		t.place(r)
	}
}
