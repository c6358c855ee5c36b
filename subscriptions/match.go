package subscriptions

// Match is the matching rule at time now: the cells overlap (some cell of
// each, for covers), the publication falls in the subscription's window,
// neither has expired, the filter accepts, and their places meet
// (geometry.go). A
// record is live (not expired) while Tmax ≥ now, so a subscription without
// a future window is a historic query and a publication without an expiry
// reaches the live subscriptions of its instant; neither is stored
// (storing needs Tmax > now). Cancellation is the caller's to check.
func Match(p *Publication, s *Subscription, now int64) bool {
	return matchIndex(p, s, now) && meets(p, s)
}

// MatchCells is Match without geometry: the thesis's rule of cells and
// times, which a benchmark compares refinement against.
func MatchCells(p *Publication, s *Subscription, now int64) bool { return matchIndex(p, s, now) }

// matchIndex is the matching rule without geometry: what the cells and
// the times say.
func matchIndex(p *Publication, s *Subscription, now int64) bool {
	if p.Cover == nil && s.Cover == nil {
		// Two one-cell records, the common case: one call, as before covers.
		if !p.Cell.Overlaps(s.Cell) {
			return false
		}
	} else if !cellsOverlap(p.Cells(), s.Cells()) {
		return false
	}
	return s.Tmin <= p.Tp && p.Tp <= s.Tmax &&
		p.Tmax >= now && s.Tmax >= now &&
		s.Filter.Accepts(p)
}

// Met reports whether p was delivered to s when the later of the two
// arrived (s not cancelled by then).
func Met(p *Publication, s *Subscription) bool { return Match(p, s, max(p.Tp, s.Ts)) }

// SelfJoinSeen reports whether a self-join subscription s must omit p: an
// earlier subscription of the same user, live when s came, already
// received it. prior holds the candidates the store found: the user's
// uncancelled subscriptions in cells overlapping s's, and their
// uncancelled self-join subscriptions in any cell (moving from c1 to a
// neighbouring c2, the user got a publication at their common ancestor in
// c1 already).
func SelfJoinSeen(p *Publication, s *Subscription, prior []*Subscription) bool {
	for _, o := range prior {
		if o.Uid == s.Uid && o.Ts < s.Ts && o.Tmax >= s.Ts && Met(p, o) {
			return true
		}
	}
	return false
}
